package policy

import (
	"maps"
	"slices"

	"go.starlark.net/starlark"
)

// Job is what a script sees of a job (the package doc lists the keys).
type Job struct {
	ID               uint64
	Name, Owner      string
	Queue            string
	Instances        int
	Waiting          int
	CPUs, GPUs       int
	MemoryMB         int64
	Licenses         map[string]int
	TimeLimitSeconds int64
	Gang             bool
	SubmittedUnix    int64
	Free             Pool
}

// Pool is what is free in the pool and how much work there is.
type Pool struct {
	FreeSlots, FreeCPUs, FreeGPUs int
	FreeMemoryMB                  int64
	Running, Waiting              int
}

// User is what a script sees of a job's owner.
type User struct {
	Name, Account       string
	Share, AccountShare int64
	Running, Waiting    int
}

// Usage is the owner's decayed fair-share usage, in slot-seconds.
type Usage struct {
	User, Account float64
}

// dict is a frozen dict of kv, in order (keys then values, alternating).
func dict(kv ...any) *starlark.Dict {
	d := starlark.NewDict(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		_ = d.SetKey(starlark.String(kv[i].(string)), value(kv[i+1]))
	}
	d.Freeze()
	return d
}

// value is v as a Starlark value.
func value(v any) starlark.Value {
	switch v := v.(type) {
	case starlark.Value:
		return v
	case string:
		return starlark.String(v)
	case int:
		return starlark.MakeInt(v)
	case int64:
		return starlark.MakeInt64(v)
	case uint64:
		return starlark.MakeUint64(v)
	case float64:
		return starlark.Float(v)
	case bool:
		return starlark.Bool(v)
	case map[string]int:
		d := starlark.NewDict(len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			_ = d.SetKey(starlark.String(k), starlark.MakeInt(v[k]))
		}
		d.Freeze()
		return d
	}
	panic("policy: no Starlark value for this Go type")
}

func (p Pool) value() starlark.Value {
	return dict("free_slots", p.FreeSlots, "free_cpus", p.FreeCPUs, "free_gpus", p.FreeGPUs,
		"free_memory_mb", p.FreeMemoryMB, "running", p.Running, "waiting", p.Waiting)
}

func (j Job) value() starlark.Value { return j.valueWith(j.Free.value()) }

// valueWith is j as the script sees it, with free as its pool.
func (j Job) valueWith(free starlark.Value) starlark.Value { return &jobRecord{j: &j, free: free} }

func (u User) value() starlark.Value {
	return dict("name", u.Name, "account", u.Account, "share", u.Share, "account_share", u.AccountShare,
		"running", u.Running, "waiting", u.Waiting)
}

func (u Usage) value() starlark.Value {
	return dict("user", u.User, "account", u.Account)
}
