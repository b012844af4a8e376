package lease

import (
	"cmp"
	"slices"
	"sync"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Book is what a lease renewal needs of the database, machine by machine,
// kept from the committed entries as they are applied (its Observe is the
// FSM's fsm.MachineObserver), so that a renewal reads it under Book's own
// short lock and never takes the FSM's: a renewal then waits for no
// snapshot, no long read and no Apply queued behind one, and costs a map
// lookup whatever the pool's size. It also keeps the pool's join order,
// appending the machines each entry creates instead of sorting the pool
// again. One Book serves a server for its life; every leadership's Table
// reads it. Safe for concurrent use.
type Book struct {
	mu       sync.Mutex // guards machines and order
	machines map[string]Entry
	// order is the pool in join order (CreateIndex, then name). It only
	// grows: readers keep a prefix of it (Pool), which appends never
	// change.
	order []string
}

// Entry is what the Book holds of one machine: the fields of its record a
// renewal answers from, as of the last entry that changed it.
type Entry struct {
	State       string // fsm.MachineUp, ...
	Addr        string // the API address the record holds
	ModifyIndex uint64
	CreateIndex uint64
	Unhealthy   string // the health problem the database records
	Asleep      string // the owner verdict the database records
	// Owner is the owner-policy settings the database gives the machine.
	Owner client.OwnerSettings
	// Position is the machine's place in the join order, from 1.
	Position int
}

// NewBook returns an empty book; the FSM fills it when it is set as the
// FSM's observer (fsm.FSM.SetMachineObserver(b.Observe)).
func NewBook() *Book {
	return &Book{machines: make(map[string]Entry)}
}

// Observe takes the machines an applied entry changed, or with all the
// whole state of v. It is an fsm.MachineObserver: called under the FSM's
// write lock, it only copies.
func (b *Book) Observe(v fsm.View, changed []*fsm.Machine, all bool) {
	if all {
		changed = v.Machines()
	}
	entries := make([]Entry, len(changed))
	for i, m := range changed {
		settings, declared := v.OwnerSettings(m)
		entries[i] = Entry{
			State: m.State, Addr: m.Addr, ModifyIndex: m.ModifyIndex, CreateIndex: m.CreateIndex,
			Unhealthy: m.Unhealthy, Asleep: m.Asleep,
			Owner: client.OwnerSettings{Settings: settings, Declared: declared},
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if all {
		b.machines = make(map[string]Entry, len(changed))
		b.order = nil
	}
	var joined []int // indexes into changed of machines new to the book
	for i, m := range changed {
		old, known := b.machines[m.Name]
		if known {
			entries[i].Position = old.Position // 0 for one joined by this entry: set below
		} else {
			joined = append(joined, i)
		}
		b.machines[m.Name] = entries[i]
	}
	if len(joined) == 0 {
		return
	}
	// New machines were created at this entry's index (or, after a
	// restore, at any): later than every machine the book knows, so they
	// go after them, in (CreateIndex, name) order among themselves.
	slices.SortFunc(joined, func(x, y int) int {
		return cmp.Or(cmp.Compare(changed[x].CreateIndex, changed[y].CreateIndex), cmp.Compare(changed[x].Name, changed[y].Name))
	})
	for _, i := range joined {
		name := changed[i].Name
		b.order = append(b.order, name)
		e := b.machines[name]
		e.Position = len(b.order)
		b.machines[name] = e
	}
}

// Machine returns what the book holds of the machine; false when no
// committed entry created it.
func (b *Book) Machine(name string) (Entry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.machines[name]
	return e, ok
}

// Size is how many machines the pool holds.
func (b *Book) Size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.order)
}

// Pool returns the pool's join order as it stands: a prefix of the
// book's, which later joins do not change.
func (b *Book) Pool() *PoolOrder {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.order)
	return &PoolOrder{names: b.order[:n:n], book: b}
}

// position is the machine's place in the join order, from 1; 0 when the
// book does not know it.
func (b *Book) position(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.machines[name].Position
}
