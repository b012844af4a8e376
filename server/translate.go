package server

import (
	"maps"
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The log format (fsm) and the wire format (client) evolve separately;
// these functions are where they meet: xToWire renders a record of the
// database for the API, xFromWire turns a request's values into a
// command's. (The dispatcher's startRequest builds the one message the
// leader sends a stub.)

// specFromWire converts a submitted job spec to the log's form, all but
// its dependencies, which resolveDependencies resolves from names, and
// its priority, which only the site policy's admit sets.
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
		Gang:          s.Gang,
		MaxPerMachine: s.MaxPerMachine,
		Load:          s.Load,
		MemoryMB:      s.MemoryMB,
		Queue:         s.Queue,
		Restart:       s.Restart,
		MaxRestarts:   s.MaxRestarts,
		Dir:           s.Dir,
		Cron:          s.Cron,
		Catchup:       s.Catchup,
		Overlap:       s.Overlap,
		Mail:          s.Mail,
		MailTypes:     clone(s.MailType),

		TimeLimitSeconds: s.TimeLimitS,
		WarnSignal:       s.WarnSignal,
		WarnLeadSeconds:  s.WarnLeadS,

		CopyIn:     clone(s.CopyIn),
		CopyInBlob: s.CopyInBlob,
		CopyInSize: s.CopyInSize,
		CopyOut:    clone(s.CopyOut),

		CPUs:          s.CPUs,
		ExclusiveCPUs: s.ExclusiveCPUs,
		GPUs:          s.GPUs,
		GPUType:       s.GPUType,
		Gres:          maps.Clone(s.Gres),
		DiskMB:        s.DiskMB,
		Licenses:      maps.Clone(s.Licenses),

		Checkpoint:     clone(s.Checkpoint),
		CheckpointExit: s.CheckpointExit,
		// Priority does not cross: only the site policy's admit sets it
		// (admitSite), and validateSpec refuses one on the wire.
	}
	for _, r := range s.Requirements {
		out.Requirements = append(out.Requirements, fsm.Requirement{Attr: r.Attr, Op: r.Op, Value: r.Value})
	}
	return out
}

// specToWire renders a job spec.
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
		Gang:          s.Gang,
		MaxPerMachine: s.MaxPerMachine,
		Load:          s.Load,
		MemoryMB:      s.MemoryMB,
		Queue:         s.Queue,
		Restart:       s.Restart,
		MaxRestarts:   s.MaxRestarts,
		After:         idsToWire(s.After),
		AfterOK:       idsToWire(s.AfterOK),
		AfterNotOK:    idsToWire(s.AfterNotOK),
		Dir:           s.Dir,
		Cron:          s.Cron,
		Catchup:       s.Catchup,
		Overlap:       s.Overlap,
		Mail:          s.Mail,
		MailType:      clone(s.MailTypes),
		TimeLimitS:    s.TimeLimitSeconds,
		WarnSignal:    s.WarnSignal,
		WarnLeadS:     s.WarnLeadSeconds,
		CopyIn:        clone(s.CopyIn),
		CopyInBlob:    s.CopyInBlob,
		CopyInSize:    s.CopyInSize,
		CopyOut:       clone(s.CopyOut),
		CPUs:          s.CPUs,
		ExclusiveCPUs: s.ExclusiveCPUs,
		GPUs:          s.GPUs,
		GPUType:       s.GPUType,
		Gres:          maps.Clone(s.Gres),
		DiskMB:        s.DiskMB,
		Licenses:      maps.Clone(s.Licenses),

		Checkpoint:     clone(s.Checkpoint),
		CheckpointExit: s.CheckpointExit,
		Priority:       s.Priority,
	}
	for _, r := range s.Requirements {
		out.Requirements = append(out.Requirements, client.Requirement{Attr: r.Attr, Op: r.Op, Value: r.Value})
	}
	return out
}

// jobToWire renders a job with its instances and, read from v, how its
// dependencies stand.
func jobToWire(v fsm.View, j *fsm.Job) client.Job {
	out := client.Job{
		ID:           j.ID,
		Name:         j.Name,
		Owner:        j.Owner,
		State:        jobStateToWire(j.State()),
		Spec:         specToWire(j.Spec),
		SubmittedAt:  j.SubmittedAt,
		Instances:    make([]client.Instance, len(j.Instances)),
		Index:        j.ModifyIndex,
		Dependencies: dependenciesToWire(v, j),
		CronJob:      j.CronJob,
		Scheduled:    j.Scheduled,
	}
	if j.Cron != nil {
		out.Cron = cronToWire(j)
	}
	for _, o := range j.Outputs {
		out.Outputs = append(out.Outputs, client.Output{Instance: o.Instance, Attempt: o.Attempt, Machine: o.Machine,
			Blob: o.Blob, Size: o.Size, Files: clone(o.Files), Lost: clone(o.Lost)})
	}
	for i := range j.Instances {
		in := &j.Instances[i]
		out.Instances[i] = client.Instance{
			Index:         in.Index,
			Attempt:       in.Attempt,
			State:         in.State,
			Machine:       in.Machine,
			GPUs:          slices.Clone(in.GPUs),
			Checkpoint:    checkpointToWire(in.Checkpoint),
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

// checkpointToWire renders an instance's newest checkpoint; nil for none.
func checkpointToWire(c *fsm.Checkpoint) *client.Checkpoint {
	if c == nil {
		return nil
	}
	return &client.Checkpoint{Attempt: c.Attempt, Machine: c.Machine, Blob: c.Blob, Size: c.Size, Files: clone(c.Files), At: c.At}
}

// addHistory adds to job, j rendered by jobToWire, how each earlier
// attempt of its instances ended: for the one job GET /v1/jobs/{ref}
// returns, not for the list.
func addHistory(job *client.Job, j *fsm.Job) {
	for i := range j.Instances {
		for _, h := range j.Instances[i].History {
			job.Instances[i].History = append(job.Instances[i].History, client.AttemptEnd{
				Attempt: h.Attempt, Machine: h.Machine, State: h.State, ExitCode: h.ExitCode, Signal: h.Signal,
				Error: h.Error, Reason: h.Reason, UserMS: h.UserMS, SysMS: h.SysMS, MaxRSSKB: h.MaxRSSKB,
				PlacedAt: h.PlacedAt, StartedAt: h.StartedAt, EndedAt: h.EndedAt,
			})
		}
	}
}

// factsFromWire converts the facts a stub reports to the log's form.
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

		GPUs:       gpusFromWire(f.GPUs),
		DiskMB:     f.DiskMB,
		Unenforced: clone(f.Unenforced),
	}
}

// gpusFromWire converts the GPUs a stub detected.
func gpusFromWire(gs []client.GPU) []fsm.GPU {
	var out []fsm.GPU
	for _, g := range gs {
		out = append(out, fsm.GPU{Index: g.Index, Type: g.Type, MemoryMB: g.MemoryMB})
	}
	return out
}

// resourcesToWire is what netstatus -m shows of machine m's countable
// resources, from its effective ones and what v's active instances
// hold; nil when it has none beyond CPUs and nothing is unenforced.
func resourcesToWire(v fsm.View, m *fsm.Machine) *client.MachineResources {
	e := m.Effective()
	cpus, gpus, disk, gres := v.MachineUsage(m.Name)
	if len(e.GPUs) == 0 && len(e.Gres) == 0 && e.DiskMB == 0 && len(m.Unenforced) == 0 && cpus <= v.Running(m.Name) {
		return nil
	}
	out := &client.MachineResources{
		CPUsUsed: cpus, Gres: maps.Clone(e.Gres), GresUsed: maps.Clone(gres),
		DiskMB: e.DiskMB, DiskUsedMB: disk, Unenforced: clone(m.Unenforced),
	}
	for _, g := range e.GPUs {
		out.GPUs = append(out.GPUs, client.GPU{Index: g.Index, Type: g.Type, MemoryMB: g.MemoryMB, Used: gpus&(1<<uint(g.Index)) != 0})
	}
	return out
}

// machineToWire reports a machine with its effective attributes (what the
// scheduler matches against), its live load and running count, and its
// state as machineState gives it.
func machineToWire(m *fsm.Machine, running int, load float64, suspect bool) client.Machine {
	e := m.Effective()
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
		State:    machineState(m, suspect),
		Keys:     clone(e.Keys),
		Attrs:    maps.Clone(e.Attrs),
		Mounts:   clone(e.Mounts),
		Addr:     m.Addr,
		Declared: e.Declared,
		Problem:  m.Unhealthy,
		Asleep:   m.Asleep,
	}
}

// machineState is the state netstatus -m shows for a machine: the
// database's, except that an up machine is draining once the database or
// its own stub says so, else asleep while its owner policy says so, else
// suspect while the leader suspects it.
func machineState(m *fsm.Machine, suspect bool) string {
	switch {
	case m.State == fsm.MachineUp && (m.Draining || m.Unhealthy != ""):
		return client.MachineDraining
	case m.State == fsm.MachineUp && m.Asleep != "":
		return client.MachineAsleep
	case m.State == fsm.MachineUp && suspect:
		return client.MachineSuspect
	}
	return m.State
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

// attemptsFromWire converts the attempts a stub reports running to the
// log's form.
func attemptsFromWire(as []client.AttemptRef) []fsm.AttemptRef {
	var out []fsm.AttemptRef
	for _, a := range as {
		out = append(out, fsm.AttemptRef{JobID: a.JobID, Instance: a.Instance, Attempt: a.Attempt})
	}
	return out
}

// reservationToWire renders a reservation.
func reservationToWire(r *fsm.Reservation) client.Reservation {
	return client.Reservation{ID: r.ID, Owner: r.Owner, Machines: clone(r.Machines), From: r.From, Until: r.Until}
}

// queueToWire renders a queue with its limits in force, its counts and
// its prime time's next change by now.
func queueToWire(q fsm.QueueView, now time.Time) client.Queue {
	return client.Queue{
		Name: q.Name, Priority: q.Priority, MaxSize: q.MaxSize, MaxActive: q.MaxActive,
		MaxRunSeconds: q.MaxRunSeconds, MaxMemMB: q.MaxMemMB,
		Jobs: q.Jobs, Waiting: q.Waiting, Running: q.Active, Policy: q.Policy, Preempt: q.Preempt,
		MaxUserActive: q.MaxUserActive, MaxUserQueued: q.MaxUserQueued, Interactive: q.Interactive,
		Prime: primeToWire(q, now),
	}
}

// queueFromWire converts the limits of a queue declared through the API
// to the log's form; the name comes from the request's path.
func queueFromWire(name string, q client.Queue) fsm.DeclaredQueue {
	return fsm.DeclaredQueue{
		Name: name, Priority: q.Priority, MaxSize: q.MaxSize, MaxActive: q.MaxActive,
		MaxRunSeconds: q.MaxRunSeconds, MaxMemMB: q.MaxMemMB,
	}
}

// eventToWire renders an event of the database's history.
func eventToWire(e fsm.Event) client.Event {
	return client.Event{
		Index: e.Index, At: e.At, Kind: e.Kind, Job: e.Job, Instance: e.Instance,
		Attempt: e.Attempt, Machine: e.Machine, Detail: e.Detail,
	}
}

// clone copies a slice of strings; an empty one comes back nil.
func clone(s []string) []string { return append([]string(nil), s...) }
