package fsm

// MachineObserver is told of every machine record an applied entry
// created or changed (changed, in the order the entry touched them; a
// machine touched twice appears twice), and of every restore (all: the
// whole state was replaced; changed is nil). It is called under the FSM's
// write lock, after the entry's changes and before any reader sees them,
// so what it keeps is never older than what a reader of the FSM sees. It
// must not block or call back into the FSM; it may read v and the
// machines until it returns, and must copy what it keeps.
type MachineObserver func(v View, changed []*Machine, all bool)

// SetMachineObserver makes f tell obs of every machine change from now
// on, and at once of the whole state (all). The leader's lease book
// (server/lease.Book) is one: a renewal then reads what it needs of the
// database without the FSM's lock.
func (f *FSM) SetMachineObserver(obs MachineObserver) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.obs = obs
	f.d.watchMachines = obs != nil
	f.applied.Store(f.d.index)
	if obs != nil {
		obs(View{d: f.d}, nil, true)
	}
}

// touchMachine records that the entry at index changed m.
func (d *db) touchMachine(m *Machine, index uint64) {
	m.ModifyIndex = index
	d.versions++
	m.version = d.versions
	if d.watchMachines {
		d.touched = append(d.touched, m)
	}
}

// tellObserver hands the machines the entries applied since the last
// call touched to the observer; under the write lock. A state a restore
// put in place has no watch armed (Restore builds a fresh db): the first
// entry after it re-arms it and tells the observer of the whole state,
// which holds that entry's changes too. Between the restore and that
// entry the observer's copy is older than the state; the server sets the
// observer again when it wins an election, and a leader restores no
// snapshot during its term.
func (f *FSM) tellObserver() {
	if f.obs == nil {
		return
	}
	if !f.d.watchMachines {
		f.d.watchMachines = true
		f.obs(View{d: f.d}, nil, true)
		return
	}
	if len(f.d.touched) == 0 {
		return
	}
	f.obs(View{d: f.d}, f.d.touched, false)
	clear(f.d.touched)
	f.d.touched = f.d.touched[:0]
}

// AppliedIndex is the index of the last entry applied, without the FSM's
// lock (Watch takes it): what a reply that must not wait for a snapshot
// or a queued Apply names as the state it answered from. After a restore
// it may be older than the restored state until the next entry.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }
