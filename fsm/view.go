package fsm

// View reads the database. It is valid only inside the function given to
// FSM.Read; the records it returns must be neither modified nor retained
// after that function returns (copy what you keep).
type View struct{ d *db }

// Index is the Raft index of the last applied command.
func (v View) Index() uint64 { return v.d.index }

// Machines returns every machine, sorted by name.
func (v View) Machines() []*Machine { return sortedMachines(v.d.machines) }

// Machine returns a machine by name.
func (v View) Machine(name string) (*Machine, bool) {
	m, ok := v.d.machines[name]
	return m, ok
}

// Running is how many instances are placed or running on a machine.
func (v View) Running(machine string) int { return v.d.running[machine] }

// Jobs returns every job, sorted by id.
func (v View) Jobs() []*Job { return sortedJobs(v.d.jobs) }

// Job returns a job by id.
func (v View) Job(id uint64) (*Job, bool) {
	j, ok := v.d.jobs[id]
	return j, ok
}

// JobByName returns the most recent job with that name.
func (v View) JobByName(name string) (*Job, bool) {
	ids := v.d.byName[name]
	if len(ids) == 0 {
		return nil, false
	}
	return v.d.jobs[ids[len(ids)-1]], true
}

// Queued returns the instances waiting for a machine, by job then instance.
func (v View) Queued() []InstanceRef { return sortedRefs(v.d.queued) }

// Active returns the placed and running instances, by job then instance.
func (v View) Active() []InstanceRef { return sortedRefs(v.d.active) }

// Instance returns one instance and its job.
func (v View) Instance(ref InstanceRef) (*Job, *Instance, bool) {
	j, in, err := v.d.instance(ref.JobID, ref.Instance)
	return j, in, err == nil
}
