package server

import (
	"maps"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The log format (fsm) and the wire format (client) evolve separately;
// these functions are the only place they meet.

func specFromWire(s client.JobSpec) fsm.JobSpec {
	return fsm.JobSpec{
		Name:     s.Name,
		Binaries: maps.Clone(s.Binaries),
		Args:     append([]string(nil), s.Args...),
		Env:      append([]string(nil), s.Env...),
		Min:      s.Min,
	}
}

func specToWire(s fsm.JobSpec) client.JobSpec {
	return client.JobSpec{
		Name:     s.Name,
		Binaries: maps.Clone(s.Binaries),
		Args:     append([]string(nil), s.Args...),
		Env:      append([]string(nil), s.Env...),
		Min:      s.Min,
	}
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
		Mounts:   append([]string(nil), f.Mounts...),
		Keys:     append([]string(nil), f.Keys...),
		Addr:     f.HTTPAddr,
	}
}

func machineToWire(m *fsm.Machine, running int, load float64) client.Machine {
	return client.Machine{
		Name:     m.Name,
		Arch:     m.Arch,
		CPUs:     m.CPUs,
		MemoryMB: m.MemoryMB,
		Load:     load,
		Running:  running,
		State:    m.State,
		Keys:     append([]string(nil), m.Keys...),
		Mounts:   append([]string(nil), m.Mounts...),
		Addr:     m.Addr,
	}
}
