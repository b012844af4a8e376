package fsm

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

func (d *db) applyStubJoin(index uint64, c *StubJoin) *Result {
	f := c.Machine
	if f.Name == "" || f.Arch == "" {
		return &Result{Index: index, Err: fmt.Errorf("%w: name and arch are required", ErrInvalidMachine)}
	}
	f.Keys = slices.Clone(f.Keys)
	slices.Sort(f.Keys)
	f.Mounts = slices.Clone(f.Mounts)
	slices.Sort(f.Mounts)
	f.Attrs = maps.Clone(f.Attrs)
	m, ok := d.machines[f.Name]
	if !ok {
		m = &Machine{CreateIndex: index}
		d.machines[f.Name] = m
		d.machinesSorted.Store(nil)
	}
	m.MachineFacts = f
	m.eff = d.decl().effective(&m.MachineFacts)
	d.refreshOpen(m.Name)
	if m.State != MachineUp {
		m.JoinedAt = c.At
		// A new stub reports its own health and owner verdict with its
		// first renewals; one that cannot (an older build) must not
		// inherit a drain or a sleep it would never clear.
		m.Unhealthy = ""
		m.Asleep = ""
		d.event(index, c.At, EventMachineJoined, 0, -1, 0, f.Name, fmt.Sprintf("%s, %d cpus", f.Arch, f.CPUs))
	}
	m.State = MachineUp
	m.LeftAt = time.Time{}
	m.LeaveReason = ""
	d.touchMachine(m, index)
	return &Result{Index: index}
}

// applyStubLeave marks the machine down. Gossip calling a machine dead is
// not proof that its processes are: restartable instances there keep their
// attempt until the machine's lease expires (LeaseExpired starts them
// elsewhere), and the others are lost, their stub free to report a result
// later.
func (d *db) applyStubLeave(index uint64, c *StubLeave) *Result {
	m, ok := d.machines[c.Machine]
	if !ok || m.State == MachineDown {
		return &Result{Index: index}
	}
	m.State = MachineDown
	m.LeftAt = c.At
	m.LeaveReason = c.Reason
	d.touchMachine(m, index)
	d.event(index, c.At, EventMachineLeft, 0, -1, 0, c.Machine, c.Reason)
	d.notes.machines = append(d.notes.machines, c.Machine)
	d.notes.down = append(d.notes.down, fmt.Sprintf("%s: %s", c.Machine, c.Reason))
	d.notes.downAt = c.At
	for _, ref := range sortedRefs(d.active) {
		if d.active[ref] != c.Machine {
			continue
		}
		j, in, _ := d.instance(ref.JobID, ref.Instance)
		if j.Spec.Restartable() && !j.KillRequested && in.State != InstanceUnknown {
			continue
		}
		d.edit(j)
		in.EndedAt = c.At
		in.Error = "machine " + c.Machine + " left the pool: " + c.Reason
		d.setState(ref.JobID, in, InstanceLost, index)
		d.event(index, c.At, EventInstanceLost, j.ID, in.Index, in.Attempt, c.Machine, in.Error)
		d.notes.lost = append(d.notes.lost, fmt.Sprintf("job %d (%s) of %s, instance %d, attempt %d on %s", j.ID, j.Name, j.Owner, in.Index, in.Attempt, c.Machine))
		d.notes.lostAt = c.At
		j.ModifyIndex = index
		d.gangEnd(j, in, in.endAsked(), index, c.At)
	}
	return &Result{Index: index}
}

// applyLoadDatabase replaces the declarations atomically. Machines whose
// declaration disappeared are drained (no new work; what runs there is left
// alone); machines declared again are no longer drained. Every machine's
// effective attributes are recomputed.
func (d *db) applyLoadDatabase(index uint64, c *LoadDatabase) *Result {
	if err := c.Database.check(); err != nil {
		return &Result{Index: index, Err: err}
	}
	// A queue that still holds unfinished jobs must stay declared: its
	// jobs would lose their limits.
	for _, name := range sortedQueueNames(d.queues) {
		if _, kept := c.Database.Queue(name); !kept && name != DefaultQueue && d.queues[name].Jobs > 0 {
			return &Result{Index: index, Err: fmt.Errorf("load would remove queue %s, which holds %d unfinished jobs; keep its add_q or wait for them: %w",
				name, d.queues[name].Jobs, ErrQueueInUse)}
		}
	}
	oldDB, oldIdx := d.database, d.declIdx
	old := indexedDB{db: &oldDB, x: &oldIdx}
	d.database = c.Database
	d.declIdx = indexDeclarations(&d.database)
	d.databaseIndex = index
	d.indexAccounts()
	d.primeAfterLoad(&oldDB)
	res := &Result{Index: index}
	for _, m := range sortedMachines(d.machines) {
		_, wasDeclared := old.machine(m.Name)
		_, declared := d.decl().machine(m.Name)
		switch {
		case wasDeclared && !declared && !m.Draining:
			m.Draining = true
			res.Draining = append(res.Draining, m.Name)
		case declared && m.Draining:
			m.Draining = false
		}
		m.eff = d.decl().effective(&m.MachineFacts)
		d.refreshOpen(m.Name)
		d.touchMachine(m, index)
	}
	d.event(index, c.At, EventDatabaseLoaded, 0, -1, 0, "", loadDetail(c, res.Draining))
	return res
}

// applyMachineHealth records the health a machine's stub reports: a
// problem stops new work going there, an empty one lets it go again.
// Running work is left alone either way. A report of the health already
// recorded changes nothing.
func (d *db) applyMachineHealth(index uint64, c *MachineHealth) *Result {
	m, ok := d.machines[c.Machine]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("machine health of %s: %w", c.Machine, ErrNoSuchMachine)}
	}
	if m.Unhealthy == c.Problem {
		return &Result{Index: index}
	}
	m.Unhealthy = c.Problem
	d.touchMachine(m, index)
	if c.Problem == "" {
		d.event(index, c.At, EventMachineHealthy, 0, -1, 0, c.Machine, "takes new work again")
	} else {
		d.event(index, c.At, EventMachineUnhealthy, 0, -1, 0, c.Machine, c.Problem)
	}
	return &Result{Index: index}
}

// applyMachineAsleep records the owner policy's verdict a machine's stub
// reports: a reason puts the machine to sleep (no new work goes there),
// an empty one wakes it. Running work is the stub's to suspend or vacate;
// Apply leaves the instances alone. A report of the verdict already
// recorded changes nothing.
func (d *db) applyMachineAsleep(index uint64, c *MachineAsleep) *Result {
	m, ok := d.machines[c.Machine]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("machine asleep of %s: %w", c.Machine, ErrNoSuchMachine)}
	}
	if m.Asleep == c.Reason {
		return &Result{Index: index}
	}
	m.Asleep = c.Reason
	d.touchMachine(m, index)
	if c.Reason == "" {
		d.event(index, c.At, EventMachineAwake, 0, -1, 0, c.Machine, "awake: takes new work again")
	} else {
		d.event(index, c.At, EventMachineAsleep, 0, -1, 0, c.Machine, "asleep ("+c.Reason+")")
	}
	return &Result{Index: index}
}
