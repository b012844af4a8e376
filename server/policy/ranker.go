package policy

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"
)

// PassSteps bounds the steps of all the priority calls of one pass: a
// script within each call's budget that is slow for every one of
// 10,000 waiting jobs stops the pass's use of it (the built-in order
// applies) instead of stalling the scheduler.
const PassSteps = 50_000_000

// Ranker calls priority for the waiting jobs of one scheduling pass,
// building what the jobs of a pass share once: now, the pool, and each
// user's and usage's dict (by user name). A Ranker is used by one
// goroutine and only for one pass: a user's values are taken as they
// were at the first call that named the user.
type Ranker struct {
	prog   *Program
	thread *starlark.Thread
	spent  uint64 // steps of the pass's calls so far
	limit  uint64 // the pass's budget: PassSteps unless SetPassSteps
	now    starlark.Value
	pool   starlark.Value
	users  map[string][2]starlark.Value // user's name: user, usage
}

// Ranker is a Ranker for one pass at now (Unix seconds of the committed
// time) over a pool with free; nil when the script defines no priority.
func (p *Program) Ranker(now int64, free Pool) *Ranker {
	if !p.HasPriority() {
		return nil
	}
	return &Ranker{prog: p, thread: newThread(), limit: PassSteps, now: starlark.MakeInt64(now), pool: free.value(),
		users: map[string][2]starlark.Value{}}
}

// Priority calls priority(job, user, usage, now) as Program.Priority
// does; job.Free is ignored (the pass's pool is used). A call that errs
// leaves the Ranker usable for the next.
func (r *Ranker) Priority(job Job, user User, usage Usage) (float64, error) {
	uv, ok := r.users[user.Name]
	if !ok {
		uv = [2]starlark.Value{user.value(), usage.value()}
		r.users[user.Name] = uv
	}
	budget := min(Steps, r.limit-min(r.spent, r.limit))
	if budget == 0 {
		return 0, &Error{Func: "priority", Msg: fmt.Sprintf("the pass's budget of %d steps is spent", r.limit)}
	}
	r.thread.Steps = 0
	r.thread.SetMaxExecutionSteps(budget)
	r.thread.Uncancel()
	v, err := starlark.Call(r.thread, r.prog.priority, starlark.Tuple{job.valueWith(r.pool), uv[0], uv[1], r.now}, nil)
	r.spent += r.thread.Steps
	if err != nil {
		e := callError("priority", err)
		if budget < Steps {
			e.(*Error).Msg += fmt.Sprintf(" (the pass's budget of %d steps is spent)", r.limit)
		}
		return 0, e
	}
	f, ok := starlark.AsFloat(v)
	if _, isBool := v.(starlark.Bool); !ok || isBool || math.IsNaN(f) {
		return 0, r.prog.resultError("priority", fmt.Sprintf("a %s, want a number", v.Type()))
	}
	return f, nil
}

// SetPassSteps sets the pass's budget to n steps in place of PassSteps.
func (r *Ranker) SetPassSteps(n uint64) { r.limit = n }
