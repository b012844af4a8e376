package policy

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
)

// jobRecord is a job as the script sees it: read like a frozen dict
// (job["cpus"], "gpus" in job, job.get("queue")), its values made only
// when read, so that a pass over 10,000 jobs builds no 10,000 dicts.
// It cannot be changed.
type jobRecord struct {
	j    *Job
	free starlark.Value
}

// jobKeys are the keys of a job, in the order String lists them.
var jobKeys = []string{"id", "name", "owner", "queue", "instances", "waiting", "cpus", "gpus",
	"memory_mb", "licenses", "time_limit", "gang", "submitted", "free"}

var (
	_ starlark.Mapping  = (*jobRecord)(nil)
	_ starlark.HasAttrs = (*jobRecord)(nil)
)

// field is the value of key, false when the job has no such key.
func (r *jobRecord) field(key string) (starlark.Value, bool) {
	j := r.j
	switch key {
	case "id":
		return starlark.MakeUint64(j.ID), true
	case "name":
		return starlark.String(j.Name), true
	case "owner":
		return starlark.String(j.Owner), true
	case "queue":
		return starlark.String(j.Queue), true
	case "instances":
		return starlark.MakeInt(j.Instances), true
	case "waiting":
		return starlark.MakeInt(j.Waiting), true
	case "cpus":
		return starlark.MakeInt(j.CPUs), true
	case "gpus":
		return starlark.MakeInt(j.GPUs), true
	case "memory_mb":
		return starlark.MakeInt64(j.MemoryMB), true
	case "licenses":
		return value(j.Licenses), true
	case "time_limit":
		return starlark.MakeInt64(j.TimeLimitSeconds), true
	case "gang":
		return starlark.Bool(j.Gang), true
	case "submitted":
		return starlark.MakeInt64(j.SubmittedUnix), true
	case "free":
		return r.free, true
	}
	return nil, false
}

// Get is job[k]; a missing key is an error naming it, as a dict's is.
func (r *jobRecord) Get(k starlark.Value) (starlark.Value, bool, error) {
	s, ok := k.(starlark.String)
	if !ok {
		return nil, false, nil
	}
	v, ok := r.field(string(s))
	return v, ok, nil
}

// Attr is job.get, job.keys, job.values and job.items, a dict's readers.
func (r *jobRecord) Attr(name string) (starlark.Value, error) {
	switch name {
	case "get":
		return starlark.NewBuiltin("get", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var key starlark.Value
			var dflt starlark.Value = starlark.None
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &key, &dflt); err != nil {
				return nil, err
			}
			if v, ok, _ := r.Get(key); ok {
				return v, nil
			}
			return dflt, nil
		}), nil
	case "keys", "values", "items":
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
				return nil, err
			}
			out := make([]starlark.Value, len(jobKeys))
			for i, k := range jobKeys {
				v, _ := r.field(k)
				switch name {
				case "keys":
					out[i] = starlark.String(k)
				case "values":
					out[i] = v
				default:
					out[i] = starlark.Tuple{starlark.String(k), v}
				}
			}
			l := starlark.NewList(out)
			l.Freeze()
			return l, nil
		}), nil
	}
	return nil, nil
}

// AttrNames are the dict readers a job has.
func (r *jobRecord) AttrNames() []string { return []string{"get", "items", "keys", "values"} }

// String lists the job's keys and values, as a dict prints.
func (r *jobRecord) String() string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range jobKeys {
		if i > 0 {
			b.WriteString(", ")
		}
		v, _ := r.field(k)
		fmt.Fprintf(&b, "%q: %s", k, v)
	}
	b.WriteString("}")
	return b.String()
}

// Type is "job".
func (r *jobRecord) Type() string { return "job" }

// Freeze does nothing: a job cannot be changed.
func (r *jobRecord) Freeze() {}

// Truth is true: a job is never empty.
func (r *jobRecord) Truth() starlark.Bool { return true }

// Hash refuses: a job, like a dict, is no key.
func (r *jobRecord) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: job") }
