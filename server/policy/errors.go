package policy

import (
	"errors"
	"fmt"
)

// Errors of Compile and of a call.
var (
	// ErrNotFunction is a top-level admit or priority that is not a function.
	ErrNotFunction = errors.New("is not a function")
	// ErrResult is a call that returned a value of the wrong type.
	ErrResult = errors.New("returned a value of the wrong type")
)

// Error is a script's failure: at load, a syntax or resolve error or a
// top-level statement that failed; at a call, the call's failure. Line and
// Col are where in the script (Col 0 when unknown); Func is "" for the
// load.
type Error struct {
	Func string
	Line int32
	Col  int32
	Msg  string
	Err  error // the underlying error, when one
}

// Error is "site.star:3:5: admit: ...": the place, then what failed.
func (e *Error) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Col > 0 {
		where = fmt.Sprintf("line %d column %d", e.Line, e.Col)
	}
	if e.Func != "" {
		return fmt.Sprintf("site policy %s, %s: %s", e.Func, where, e.Msg)
	}
	return fmt.Sprintf("site policy, %s: %s", where, e.Msg)
}

// Unwrap is the underlying error.
func (e *Error) Unwrap() error { return e.Err }
