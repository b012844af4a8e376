package policy

import (
	"errors"
	"fmt"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Steps is the step budget of one call, and of the script's top level at
// load: enough for loops over a few thousand values, small enough that a
// runaway script costs a pass a few milliseconds.
const Steps = 100_000

// Filename is the name the script is compiled under, the one its errors
// would name if they named a file.
const Filename = "site.star"

// fileOptions are the dialect: Starlark's defaults (no while, no
// recursion, no top-level if/for), which every step budget also bounds.
var fileOptions = &syntax.FileOptions{}

// Program is a compiled, initialised script. It is immutable (its
// globals are frozen) and safe for concurrent calls.
type Program struct {
	admit, priority *starlark.Function
}

// Compile parses src, resolves it, runs its top level under the step
// budget and freezes its globals. A syntax or resolve error is an *Error
// naming the line and column; so is a top level that fails, or an admit
// or priority that is not a function.
func Compile(src string) (*Program, error) {
	_, prog, err := starlark.SourceProgramOptions(fileOptions, Filename, src, func(string) bool { return false })
	if err != nil {
		return nil, loadError(err)
	}
	thread := newThread()
	globals, err := prog.Init(thread, nil)
	if err != nil {
		return nil, callError("", err)
	}
	globals.Freeze()
	p := &Program{}
	for name, dst := range map[string]**starlark.Function{"admit": &p.admit, "priority": &p.priority} {
		v, ok := globals[name]
		if !ok {
			continue
		}
		fn, ok := v.(*starlark.Function)
		if !ok {
			return nil, &Error{Msg: fmt.Sprintf("%s %v", name, ErrNotFunction), Err: ErrNotFunction}
		}
		pos := fn.Position()
		if fn.NumParams() != map[string]int{"admit": 2, "priority": 4}[name] {
			return nil, &Error{Line: pos.Line, Col: pos.Col, Msg: fmt.Sprintf("%s takes %d parameters, want %s", name, fn.NumParams(),
				map[string]string{"admit": "2 (job, user)", "priority": "4 (job, user, usage, now)"}[name])}
		}
		*dst = fn
	}
	return p, nil
}

// HasAdmit reports whether the script defines admit.
func (p *Program) HasAdmit() bool { return p != nil && p.admit != nil }

// HasPriority reports whether the script defines priority.
func (p *Program) HasPriority() bool { return p != nil && p.priority != nil }

// newThread is a thread for one call: no load, no print, the step budget.
func newThread() *starlark.Thread {
	t := &starlark.Thread{Name: "policy", Print: func(*starlark.Thread, string) {}}
	t.SetMaxExecutionSteps(Steps)
	return t
}

// loadError is err from parsing or resolving as an *Error with its place.
func loadError(err error) error {
	var se syntax.Error
	if errors.As(err, &se) {
		return &Error{Line: se.Pos.Line, Col: se.Pos.Col, Msg: se.Msg, Err: err}
	}
	var rl resolve.ErrorList
	if errors.As(err, &rl) && len(rl) > 0 {
		return &Error{Line: rl[0].Pos.Line, Col: rl[0].Pos.Col, Msg: rl[0].Msg, Err: err}
	}
	return &Error{Msg: err.Error(), Err: err}
}

// callError is err from running fn ("" for the top level) as an *Error
// with the innermost line of the script that was running.
func callError(fn string, err error) error {
	e := &Error{Func: fn, Msg: err.Error(), Err: err}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		e.Msg = ee.Msg
		for i := range ee.CallStack {
			pos := ee.CallStack.At(i).Pos
			if pos.Filename() == Filename {
				e.Line, e.Col = pos.Line, pos.Col
				break
			}
		}
	}
	return e
}
