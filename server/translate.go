package server

import (
	"maps"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The log format (fsm) and the wire format (client) evolve separately;
// these functions are the only place they meet.

func specFromWire(s client.JobSpec) fsm.JobSpec {
	out := fsm.JobSpec{
		Name:          s.Name,
		Binaries:      maps.Clone(s.Binaries),
		Args:          clone(s.Args),
		Env:           clone(s.Env),
		Min:           s.Min,
		Keys:          clone(s.Keys),
		Mounts:        clone(s.Mounts),
		Machines:      clone(s.Machines),
		Unique:        s.Unique,
		MaxPerMachine: s.MaxPerMachine,
		Load:          s.Load,
		MemoryMB:      s.MemoryMB,
		Queue:         s.Queue,
		Restart:       s.Restart,
		MaxRestarts:   s.MaxRestarts,
	}
	for _, r := range s.Requirements {
		out.Requirements = append(out.Requirements, fsm.Requirement{Attr: r.Attr, Op: r.Op, Value: r.Value})
	}
	return out
}

func specToWire(s fsm.JobSpec) client.JobSpec {
	out := client.JobSpec{
		Name:          s.Name,
		Binaries:      maps.Clone(s.Binaries),
		Args:          clone(s.Args),
		Env:           clone(s.Env),
		Min:           s.Min,
		Keys:          clone(s.Keys),
		Mounts:        clone(s.Mounts),
		Machines:      clone(s.Machines),
		Unique:        s.Unique,
		MaxPerMachine: s.MaxPerMachine,
		Load:          s.Load,
		MemoryMB:      s.MemoryMB,
		Queue:         s.Queue,
		Restart:       s.Restart,
		MaxRestarts:   s.MaxRestarts,
	}
	for _, r := range s.Requirements {
		out.Requirements = append(out.Requirements, client.Requirement{Attr: r.Attr, Op: r.Op, Value: r.Value})
	}
	return out
}

func jobToWire(j *fsm.Job) client.Job {
	out := client.Job{
		ID:          j.ID,
		Name:        j.Name,
		Owner:       j.Owner,
		State:       j.State(),
		Spec:        specToWire(j.Spec),
		SubmittedAt: j.SubmittedAt,
		Instances:   make([]client.Instance, len(j.Instances)),
		Index:       j.ModifyIndex,
	}
	for i := range j.Instances {
		in := &j.Instances[i]
		out.Instances[i] = client.Instance{
			Index:         in.Index,
			Attempt:       in.Attempt,
			State:         in.State,
			Machine:       in.Machine,
			Binary:        j.Spec.Binaries[in.Key],
			PID:           in.PID,
			ExitCode:      in.ExitCode,
			Signal:        in.Signal,
			Error:         in.Error,
			PlacedAt:      in.PlacedAt,
			StartedAt:     in.StartedAt,
			EndedAt:       in.EndedAt,
			UserMS:        in.UserMS,
			SysMS:         in.SysMS,
			MaxRSSKB:      in.MaxRSSKB,
			KillRequested: in.KillRequested,
			Restarts:      in.Restarts,
			NotBefore:     in.NotBefore,
			Reason:        in.Reason,
			Leftovers:     leftoversToWire(in.Leftovers),
			Queue:         j.Queue,
		}
	}
	return out
}

func factsFromWire(f client.Facts) fsm.MachineFacts {
	return fsm.MachineFacts{
		Name:     f.Name,
		Arch:     f.Arch,
		CPUs:     f.CPUs,
		MemoryMB: f.MemoryMB,
		Mounts:   clone(f.Mounts),
		Keys:     clone(f.Keys),
		MType:    f.MType,
		Attrs:    maps.Clone(f.Attrs),
		Addr:     f.HTTPAddr,
	}
}

// machineToWire reports a machine with its effective attributes (what the
// scheduler matches against) and its live load and running count.
func machineToWire(m *fsm.Machine, running int, load float64) client.Machine {
	e := m.Effective()
	state := m.State
	if m.State == fsm.MachineUp && m.Draining {
		state = client.MachineDraining
	}
	return client.Machine{
		Name:     m.Name,
		Arch:     m.Arch,
		MType:    e.MType,
		CPUs:     m.CPUs,
		Slots:    m.Slots(),
		MemoryMB: e.MemoryMB,
		Rating:   e.Rating,
		Load:     load,
		Running:  running,
		State:    state,
		Keys:     clone(e.Keys),
		Attrs:    maps.Clone(e.Attrs),
		Mounts:   clone(e.Mounts),
		Addr:     m.Addr,
		Declared: e.Declared,
	}
}

// leftoversToWire converts an instance's killed leftover processes.
func leftoversToWire(ls []fsm.Leftover) []client.Leftover {
	if len(ls) == 0 {
		return nil
	}
	out := make([]client.Leftover, len(ls))
	for i, l := range ls {
		out[i] = client.Leftover{PID: l.PID, Comm: l.Comm}
	}
	return out
}

// leftoversFromWire converts a CHILD_TERM's leftover processes to the
// command's.
func leftoversFromWire(ls []client.Leftover) []fsm.Leftover {
	if len(ls) == 0 {
		return nil
	}
	out := make([]fsm.Leftover, len(ls))
	for i, l := range ls {
		out[i] = fsm.Leftover{PID: l.PID, Comm: l.Comm}
	}
	return out
}
