package policy

import (
	"fmt"

	"go.starlark.net/starlark"
)

// Decision is admit's answer: Refuse is the message of a refusal ("" to
// accept); otherwise Queue and TimeLimitSeconds, when set, replace the
// job's own (the caller checks them against the queue's maxima), and
// Priority, MinPriority to MaxPriority, becomes the job's priority
// within its queue (0, a job's own, when unset).
type Decision struct {
	Refuse           string
	Queue            string
	TimeLimitSeconds int64
	Priority         int
}

// MinPriority and MaxPriority bound the "priority" admit may give a job;
// they are the log's bounds (fsm.MinJobPriority, fsm.MaxJobPriority).
const (
	MinPriority = -1000
	MaxPriority = 1000
)

// Admit calls the script's admit(job, user); the zero Decision when the
// script has none. It is safe for concurrent use.
func (p *Program) Admit(job Job, user User) (Decision, error) {
	if !p.HasAdmit() {
		return Decision{}, nil
	}
	v, err := starlark.Call(newThread(), p.admit, starlark.Tuple{job.value(), user.value()}, nil)
	if err != nil {
		return Decision{}, callError("admit", err)
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return Decision{}, nil
	case starlark.String:
		if v == "" {
			return Decision{}, p.resultError("admit", "an empty refusal")
		}
		return Decision{Refuse: string(v)}, nil
	case *starlark.Dict:
		return p.changes(v)
	}
	return Decision{}, p.resultError("admit", fmt.Sprintf("a %s, want None, a string or a dict", v.Type()))
}

// changes is the Decision of admit's dict.
func (p *Program) changes(d *starlark.Dict) (Decision, error) {
	var dec Decision
	for _, kv := range d.Items() {
		k, _ := starlark.AsString(kv[0])
		switch k {
		case "queue":
			s, ok := starlark.AsString(kv[1])
			if !ok || s == "" {
				return Decision{}, p.resultError("admit", "a queue that is not a non-empty string")
			}
			dec.Queue = s
		case "time_limit":
			var n int64
			if err := starlark.AsInt(kv[1], &n); err != nil || n <= 0 {
				return Decision{}, p.resultError("admit", "a time_limit that is not a positive int")
			}
			dec.TimeLimitSeconds = n
		case "priority":
			var n int
			if err := starlark.AsInt(kv[1], &n); err != nil || n < MinPriority || n > MaxPriority {
				return Decision{}, p.resultError("admit", fmt.Sprintf("a priority that is not an int from %d to %d", MinPriority, MaxPriority))
			}
			dec.Priority = n
		default:
			return Decision{}, p.resultError("admit", fmt.Sprintf("a change to %s, want queue, time_limit or priority", kv[0]))
		}
	}
	return dec, nil
}

// Priority calls the script's priority(job, user, usage, now): the
// number that orders job among its queue's waiting work, highest first.
// It is safe for concurrent use; the caller checks HasPriority first. A
// pass calls it through a Ranker instead.
func (p *Program) Priority(job Job, user User, usage Usage, now int64) (float64, error) {
	return p.Ranker(now, job.Free).Priority(job, user, usage)
}

// resultError is a call of fn that returned what, at fn's line.
func (p *Program) resultError(fn, what string) error {
	f := p.admit
	if fn == "priority" {
		f = p.priority
	}
	pos := f.Position()
	return &Error{Func: fn, Line: pos.Line, Msg: fmt.Sprintf("returned %s", what), Err: ErrResult}
}
