package fsm

import (
	"fmt"
	"maps"
	"slices"
)

// The version 15 record layouts: each write function and its read function
// list the same fields in the same order. A field added to a record needs
// a new snapshot version that writes it, and the reader reads it only from
// that version on; TestRecordsRoundTrip fails until it is written. Version
// 4 lacks the machine's Unhealthy and Asleep, the last fields of its
// record, and versions 5 to 7 lack Asleep, the last; versions 4 and 5
// hold no token records; versions 4 to 6 lack the job's dependencies (the
// spec's After, AfterOK and AfterNotOK), and versions 4 to 8 the spec's
// Dir, the job's cron record and its Mail and MailTypes, which follow them;
// versions 4 to 8 hold no mail records; versions 4 to 9 lack the spec's
// TimeLimitSeconds, WarnSignal and WarnLeadSeconds; versions 4 to 10 the
// spec's Gang; versions 4 to 11 the spec's copy_in and copy_out fields
// and the job's Outputs; versions 4 to 13 the machine's GPUs and DiskMB
// and the job's resource requests and its instances' GPUs, the last
// fields of their records (13 added fair share's usage to the header,
// not to the records); versions 4 to 14 the spec's Checkpoint and
// CheckpointExit, the instances' Checkpoint and the spec's Priority, the
// job's last fields.

func (e *encoder) machine(m *Machine) {
	f := &m.MachineFacts
	e.sym(f.Name)
	e.sym(f.Arch)
	e.int(int64(f.CPUs))
	e.int(f.MemoryMB)
	e.symList(f.Mounts)
	e.symList(f.Keys)
	e.sym(f.MType)
	e.attrs(f.Attrs)
	e.str(f.Addr)
	e.sym(m.State)
	e.bool(m.Draining)
	e.time(m.JoinedAt)
	e.time(m.LeftAt)
	e.str(m.LeaveReason)
	e.uint(m.CreateIndex)
	e.uint(m.ModifyIndex)
	e.str(m.Unhealthy)          // since version 5
	e.str(m.Asleep)             // since version 8
	e.uint(uint64(len(f.GPUs))) // since version 14
	for _, g := range f.GPUs {
		e.int(int64(g.Index))
		e.sym(g.Type)
		e.int(g.MemoryMB)
	}
	e.int(f.DiskMB)
	e.strs(f.Unenforced)
	e.endRecord()
}

func (d *decoder) machine(m *Machine) {
	f := &m.MachineFacts
	f.Name = d.sym()
	f.Arch = d.sym()
	f.CPUs = int(d.int())
	f.MemoryMB = d.int()
	f.Mounts = d.symList()
	f.Keys = d.symList()
	f.MType = d.sym()
	f.Attrs = d.attrs()
	d.str(&f.Addr)
	m.State = d.sym()
	m.Draining = d.bool()
	m.JoinedAt = d.time()
	m.LeftAt = d.time()
	d.str(&m.LeaveReason)
	m.CreateIndex = d.uint()
	m.ModifyIndex = d.uint()
	if d.version >= 5 {
		d.str(&m.Unhealthy)
	}
	if d.version >= 8 {
		d.str(&m.Asleep)
	}
	if d.version >= 14 {
		f.GPUs = list(d, func(g *GPU) {
			g.Index = int(d.int())
			g.Type = d.sym()
			g.MemoryMB = d.int()
		})
		f.DiskMB = d.int()
		f.Unenforced = d.strs()
	}
	d.flushRaw()
}

func (e *encoder) job(j *Job) {
	e.uint(j.ID)
	e.str(j.Name)
	e.sym(j.Owner)
	e.sym(j.Queue)
	e.spec(&j.Spec)
	e.time(j.SubmittedAt)
	e.str(j.IdempotencyKey)
	e.bool(j.KillRequested)
	e.sym(j.KilledBy)
	e.sym(j.KillSignal)
	e.uint(uint64(len(j.Instances)))
	for i := range j.Instances {
		e.instance(&j.Instances[i])
	}
	e.uint(j.CreateIndex)
	e.uint(j.ModifyIndex)
	e.uints(j.Spec.After) // since version 7
	e.uints(j.Spec.AfterOK)
	e.uints(j.Spec.AfterNotOK)
	e.str(j.Spec.Dir) // since version 9
	e.cron(j)         // since version 9
	e.str(j.Spec.Mail)
	e.symList(j.Spec.MailTypes)
	e.uint(uint64(j.Spec.TimeLimitSeconds)) // since version 10
	e.sym(j.Spec.WarnSignal)
	e.uint(uint64(j.Spec.WarnLeadSeconds))
	e.bool(j.Spec.Gang) // since version 11
	e.files(j)          // since version 12
	e.resources(j)      // since version 14
	e.preempts(j)       // since version 15
	e.checkpoints(j)    // since version 15
	e.int(int64(j.Spec.Priority))
	e.endRecord()
}

func (d *decoder) job(j *Job) {
	j.ID = d.uint()
	d.str(&j.Name)
	j.Owner = d.sym()
	j.Queue = d.sym()
	d.spec(&j.Spec)
	j.SubmittedAt = d.time()
	d.str(&j.IdempotencyKey)
	j.KillRequested = d.bool()
	j.KilledBy = d.sym()
	j.KillSignal = d.sym()
	j.Instances = d.instanceList()
	j.CreateIndex = d.uint()
	j.ModifyIndex = d.uint()
	if d.version >= 7 {
		j.Spec.After = d.uints()
		j.Spec.AfterOK = d.uints()
		j.Spec.AfterNotOK = d.uints()
	}
	if d.version >= 9 {
		d.str(&j.Spec.Dir)
		d.cron(j)
		d.str(&j.Spec.Mail)
		j.Spec.MailTypes = d.symList()
	}
	if d.version >= 10 {
		j.Spec.TimeLimitSeconds = int64(d.uint())
		j.Spec.WarnSignal = d.sym()
		j.Spec.WarnLeadSeconds = int64(d.uint())
	}
	if d.version >= 11 {
		j.Spec.Gang = d.bool()
	}
	if d.version >= 12 {
		d.files(j)
	}
	if d.version >= 14 {
		d.resources(j)
	}
	if d.version >= 15 {
		d.preempts(j)
		d.checkpoints(j)
		j.Spec.Priority = int(d.int())
	}
	d.flushRaw()
}

// files writes a job's copy_in and copy_out options and its kept
// outputs (since version 12).
func (e *encoder) files(j *Job) {
	e.strs(j.Spec.CopyIn)
	e.str(j.Spec.CopyInBlob)
	e.uint(uint64(j.Spec.CopyInSize))
	e.strs(j.Spec.CopyOut)
	e.uint(uint64(len(j.Outputs)))
	for _, o := range j.Outputs {
		e.int(int64(o.Instance))
		e.uint(o.Attempt)
		e.sym(o.Machine)
		e.str(o.Blob)
		e.uint(uint64(o.Size))
		e.strs(o.Files)
		e.strs(o.Lost)
	}
}

// files reads what encoder.files wrote.
func (d *decoder) files(j *Job) {
	j.Spec.CopyIn = d.strs()
	d.str(&j.Spec.CopyInBlob)
	j.Spec.CopyInSize = int64(d.uint())
	j.Spec.CopyOut = d.strs()
	j.Outputs = list(d, func(o *Output) {
		o.Instance = int(d.int())
		o.Attempt = d.uint()
		o.Machine = d.sym()
		d.str(&o.Blob)
		o.Size = int64(d.uint())
		o.Files = d.strs()
		o.Lost = d.strs()
	})
}

// resources writes a job's resource requests and the GPUs each of its
// instances holds (since version 14).
func (e *encoder) resources(j *Job) {
	s := &j.Spec
	e.int(int64(s.CPUs))
	e.bool(s.ExclusiveCPUs)
	e.int(int64(s.GPUs))
	e.sym(s.GPUType)
	e.counts(s.Gres)
	e.int(s.DiskMB)
	e.counts(s.Licenses)
	n := 0
	for i := range j.Instances {
		if len(j.Instances[i].GPUs) > 0 {
			n++
		}
	}
	e.uint(uint64(n))
	for i := range j.Instances {
		if in := &j.Instances[i]; len(in.GPUs) > 0 {
			e.int(int64(i))
			e.uint(uint64(len(in.GPUs)))
			for _, g := range in.GPUs {
				e.int(int64(g))
			}
		}
	}
}

// resources reads what encoder.resources wrote.
func (d *decoder) resources(j *Job) {
	s := &j.Spec
	s.CPUs = int(d.int())
	s.ExclusiveCPUs = d.bool()
	s.GPUs = int(d.int())
	s.GPUType = d.sym()
	s.Gres = d.counts()
	s.DiskMB = d.int()
	s.Licenses = d.counts()
	n := d.count()
	for range n {
		i := int(d.int())
		gpus := list(d, func(g *int) { *g = int(d.int()) })
		if d.err != nil {
			return
		}
		if i < 0 || i >= len(j.Instances) {
			d.fail(fmt.Errorf("%w: GPUs of instance %d of job %d, which has %d", errCorrupt, i, j.ID, len(j.Instances)))
			return
		}
		j.Instances[i].GPUs = gpus
	}
}

// checkpoints writes a job's checkpoint options and the newest
// checkpoint of each of its instances that kept one (since version 15).
func (e *encoder) checkpoints(j *Job) {
	e.strs(j.Spec.Checkpoint)
	e.int(int64(j.Spec.CheckpointExit))
	n := 0
	for i := range j.Instances {
		if j.Instances[i].Checkpoint != nil {
			n++
		}
	}
	e.uint(uint64(n))
	for i := range j.Instances {
		c := j.Instances[i].Checkpoint
		if c == nil {
			continue
		}
		e.int(int64(i))
		e.uint(c.Attempt)
		e.sym(c.Machine)
		e.str(c.Blob)
		e.uint(uint64(c.Size))
		e.strs(c.Files)
		e.time(c.At)
		e.uint(c.Index)
	}
}

// checkpoints reads what encoder.checkpoints wrote.
func (d *decoder) checkpoints(j *Job) {
	j.Spec.Checkpoint = d.strs()
	j.Spec.CheckpointExit = int(d.int())
	n := d.count()
	for range n {
		i := int(d.int())
		c := &Checkpoint{Attempt: d.uint(), Machine: d.sym()}
		d.str(&c.Blob)
		c.Size = int64(d.uint())
		c.Files = d.strs()
		c.At = d.time()
		c.Index = d.uint()
		if d.err != nil {
			return
		}
		if i < 0 || i >= len(j.Instances) {
			d.fail(fmt.Errorf("%w: checkpoint of instance %d of job %d, which has %d", errCorrupt, i, j.ID, len(j.Instances)))
			return
		}
		j.Instances[i].Checkpoint = c
	}
}

// counts writes a map of names to counts, in name order.
func (e *encoder) counts(m map[string]int) {
	e.uint(uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.sym(k)
		e.int(int64(m[k]))
	}
}

// counts reads what encoder.counts wrote; nil when empty.
func (d *decoder) counts() map[string]int {
	n := d.count()
	if n == 0 {
		return nil
	}
	m := make(map[string]int, min(n, presize))
	for range n {
		k := d.sym()
		m[k] = int(d.int())
		if d.err != nil {
			return nil
		}
	}
	return m
}

// cron writes a job's cron options and state, and its place among a cron
// job's runs (since version 9).
func (e *encoder) cron(j *Job) {
	e.str(j.Spec.Cron)
	e.sym(j.Spec.Catchup)
	e.sym(j.Spec.Overlap)
	e.uint(j.CronJob)
	e.time(j.Scheduled)
	e.bool(j.Cron != nil)
	if c := j.Cron; c != nil {
		e.time(c.Through)
		e.uints(c.Runs)
		e.uint(uint64(len(c.Skips)))
		for _, s := range c.Skips {
			e.time(s.Scheduled)
			e.str(s.Reason)
		}
		e.int(int64(c.Skipped))
		e.int(int64(c.Missed))
		e.bool(c.Ended)
		e.time(c.EndedAt)
		e.sym(c.EndedBy)
	}
}

// cron reads what encoder.cron wrote.
func (d *decoder) cron(j *Job) {
	d.str(&j.Spec.Cron)
	j.Spec.Catchup = d.sym()
	j.Spec.Overlap = d.sym()
	j.CronJob = d.uint()
	j.Scheduled = d.time()
	if !d.bool() {
		return
	}
	c := &CronState{}
	c.Through = d.time()
	c.Runs = d.uints()
	c.Skips = list(d, func(s *CronSkip) {
		s.Scheduled = d.time()
		d.str(&s.Reason)
	})
	c.Skipped = int(d.int())
	c.Missed = int(d.int())
	c.Ended = d.bool()
	c.EndedAt = d.time()
	c.EndedBy = d.sym()
	j.Cron = c
}

// uints writes a count then the numbers.
func (e *encoder) uints(vs []uint64) {
	e.uint(uint64(len(vs)))
	for _, v := range vs {
		e.uint(v)
	}
}

// uints reads what encoder.uints wrote; nil when empty.
func (d *decoder) uints() []uint64 {
	return list(d, func(v *uint64) { *v = d.uint() })
}

func (e *encoder) spec(s *JobSpec) {
	e.str(s.Name)
	e.symMap(s.Binaries)
	e.strs(s.Args)
	e.strs(s.Env)
	e.int(int64(s.Min))
	e.symList(s.Keys)
	e.uint(uint64(len(s.Requirements)))
	for _, r := range s.Requirements {
		e.sym(r.Attr)
		e.sym(r.Op)
		e.float(r.Value)
	}
	e.symList(s.Mounts)
	e.symList(s.Machines)
	e.bool(s.Unique)
	e.int(int64(s.MaxPerMachine))
	e.float(s.Load)
	e.int(s.MemoryMB)
	e.sym(s.Queue)
	e.sym(s.Restart)
	e.int(int64(s.MaxRestarts))
}

func (d *decoder) spec(s *JobSpec) {
	d.str(&s.Name)
	// A spec never changes after Submit (Apply only reads it, and View's
	// users must not change what they read), so specs naming the same
	// binaries share one map.
	s.Binaries = d.sharedSymMap()
	s.Args = d.strs()
	s.Env = d.strs()
	s.Min = int(d.int())
	s.Keys = d.symList()
	s.Requirements = list(d, func(r *Requirement) {
		r.Attr = d.sym()
		r.Op = d.sym()
		r.Value = d.float()
	})
	s.Mounts = d.symList()
	s.Machines = d.symList()
	s.Unique = d.bool()
	s.MaxPerMachine = int(d.int())
	s.Load = d.float()
	s.MemoryMB = d.int()
	s.Queue = d.sym()
	s.Restart = d.sym()
	s.MaxRestarts = int(d.int())
}

func (e *encoder) instance(in *Instance) {
	e.int(int64(in.Index))
	e.uint(in.Attempt)
	e.sym(in.State)
	e.sym(in.Machine)
	e.sym(in.Key)
	e.int(int64(in.PID))
	e.int(int64(in.ExitCode))
	e.sym(in.Signal)
	e.str(in.Error)
	e.int(in.UserMS)
	e.int(in.SysMS)
	e.int(in.MaxRSSKB)
	e.time(in.PlacedAt)
	e.time(in.StartedAt)
	e.time(in.EndedAt)
	e.bool(in.KillRequested)
	e.time(in.NotBefore)
	e.bool(in.RestartRequested)
	e.str(in.Reason)
	e.uint(in.SuspendIndex)
	e.uint(in.ResumeIndex)
	e.int(int64(in.Restarts))
	e.uint(uint64(len(in.History)))
	for i := range in.History {
		e.attemptEnd(&in.History[i])
	}
	e.uint(uint64(len(in.Leftovers)))
	for _, l := range in.Leftovers {
		e.int(int64(l.PID))
		e.sym(l.Comm)
	}
	e.int(int64(in.StaleEvents))
	e.uint(in.ModifyIndex)
}

func (d *decoder) instance(in *Instance) {
	in.Index = int(d.int())
	in.Attempt = d.uint()
	in.State = d.sym()
	in.Machine = d.sym()
	in.Key = d.sym()
	in.PID = int(d.int())
	in.ExitCode = int(d.int())
	in.Signal = d.sym()
	d.str(&in.Error)
	in.UserMS = d.int()
	in.SysMS = d.int()
	in.MaxRSSKB = d.int()
	in.PlacedAt = d.time()
	in.StartedAt = d.time()
	in.EndedAt = d.time()
	in.KillRequested = d.bool()
	in.NotBefore = d.time()
	in.RestartRequested = d.bool()
	d.str(&in.Reason)
	in.SuspendIndex = d.uint()
	in.ResumeIndex = d.uint()
	in.Restarts = int(d.int())
	in.History = list(d, d.attemptEnd)
	in.Leftovers = list(d, func(l *Leftover) {
		l.PID = int(d.int())
		l.Comm = d.sym()
	})
	in.StaleEvents = int(d.int())
	in.ModifyIndex = d.uint()
}

func (e *encoder) attemptEnd(a *AttemptEnd) {
	e.uint(a.Attempt)
	e.sym(a.Machine)
	e.sym(a.Key)
	e.sym(a.State)
	e.int(int64(a.ExitCode))
	e.sym(a.Signal)
	e.str(a.Error)
	e.str(a.Reason)
	e.int(a.UserMS)
	e.int(a.SysMS)
	e.int(a.MaxRSSKB)
	e.time(a.PlacedAt)
	e.time(a.StartedAt)
	e.time(a.EndedAt)
}

func (d *decoder) attemptEnd(a *AttemptEnd) {
	a.Attempt = d.uint()
	a.Machine = d.sym()
	a.Key = d.sym()
	a.State = d.sym()
	a.ExitCode = int(d.int())
	a.Signal = d.sym()
	d.str(&a.Error)
	d.str(&a.Reason)
	a.UserMS = d.int()
	a.SysMS = d.int()
	a.MaxRSSKB = d.int()
	a.PlacedAt = d.time()
	a.StartedAt = d.time()
	a.EndedAt = d.time()
}

func (e *encoder) reservation(r *Reservation) {
	e.uint(r.ID)
	e.sym(r.Owner)
	e.symList(r.Machines)
	e.time(r.From)
	e.time(r.Until)
	e.uint(r.CreateIndex)
	e.endRecord()
}

func (d *decoder) reservation(r *Reservation) {
	r.ID = d.uint()
	r.Owner = d.sym()
	r.Machines = d.symList()
	r.From = d.time()
	r.Until = d.time()
	r.CreateIndex = d.uint()
}

// token is written since version 6.
func (e *encoder) token(t *Token) {
	e.str(t.ID)
	e.sym(t.User)
	e.str(t.Hash)
	e.time(t.IssuedAt)
	e.time(t.ExpiresAt)
	e.sym(t.IssuedBy)
	e.uint(t.CreateIndex)
	e.endRecord()
}

func (d *decoder) token(t *Token) {
	d.str(&t.ID)
	t.User = d.sym()
	d.str(&t.Hash)
	t.IssuedAt = d.time()
	t.ExpiresAt = d.time()
	t.IssuedBy = d.sym()
	t.CreateIndex = d.uint()
	d.flushRaw()
}

// mail is written since version 9.
func (e *encoder) mail(m *Mail) {
	e.str(m.ID)
	e.uint(m.Index)
	e.time(m.At)
	e.sym(m.Event)
	e.symList(m.To)
	e.uint(m.Job)
	e.str(m.Subject)
	e.str(m.Body)
	e.int(int64(m.Attempts))
	e.str(m.LastError)
	e.time(m.LastTry)
	e.endRecord()
}

func (d *decoder) mail(m *Mail) {
	d.str(&m.ID)
	m.Index = d.uint()
	m.At = d.time()
	m.Event = d.sym()
	m.To = d.symList()
	m.Job = d.uint()
	d.str(&m.Subject)
	d.str(&m.Body)
	m.Attempts = int(d.int())
	d.str(&m.LastError)
	m.LastTry = d.time()
	d.flushRaw()
}

// preempts writes each instance's PreemptedBy and Preempt (since
// version 15).
func (e *encoder) preempts(j *Job) {
	for i := range j.Instances {
		e.uint(j.Instances[i].PreemptedBy)
		e.sym(j.Instances[i].Preempt)
	}
}

func (d *decoder) preempts(j *Job) {
	for i := range j.Instances {
		j.Instances[i].PreemptedBy = d.uint()
		j.Instances[i].Preempt = d.sym()
	}
}
