package fsm

import (
	"fmt"
	"slices"
	"time"
)

// applyReserve records a reservation. Every machine must be known, and no
// other user's reservation of it may overlap the window; a user may hold
// overlapping reservations of their own.
func (d *db) applyReserve(index uint64, c *Reserve) *Result {
	if c.Owner == "" || len(c.Machines) == 0 || (!c.Until.IsZero() && !c.Until.After(c.From)) {
		return &Result{Index: index, Err: fmt.Errorf("reserve: an owner, machines and a window that ends after it starts are required: %w", ErrInvalidSpec)}
	}
	machines := slices.Clone(c.Machines)
	slices.Sort(machines)
	machines = slices.Compact(machines)
	for _, name := range machines {
		if _, ok := d.machines[name]; !ok {
			return &Result{Index: index, Err: fmt.Errorf("reserve %s: %w", name, ErrNoSuchMachine)}
		}
		for _, r := range d.sortedReservations() {
			if r.Owner != c.Owner && slices.Contains(r.Machines, name) && r.overlaps(c.From, c.Until) {
				return &Result{Index: index, Err: fmt.Errorf("reserve %s: %w by %s (reservation %d)", name, ErrReserved, r.Owner, r.ID)}
			}
		}
	}
	r := &Reservation{
		ID: d.nextReservationID, Owner: c.Owner, Machines: machines,
		From: c.From, Until: c.Until, CreateIndex: index,
	}
	d.nextReservationID++
	d.reservations[r.ID] = r
	return &Result{Index: index, ReservationID: r.ID}
}

// applyUnreserve ends reservations; unknown ids are ignored, so a retried
// or racing unreserve changes nothing twice.
func (d *db) applyUnreserve(index uint64, c *Unreserve) *Result {
	res := &Result{Index: index}
	for _, id := range c.IDs {
		if _, ok := d.reservations[id]; ok {
			delete(d.reservations, id)
			res.Ended = append(res.Ended, id)
		}
	}
	return res
}

func (d *db) sortedReservations() []*Reservation {
	ids := make([]uint64, 0, len(d.reservations))
	for id := range d.reservations {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*Reservation, len(ids))
	for i, id := range ids {
		out[i] = d.reservations[id]
	}
	return out
}

// reservedBy returns who holds a reservation of machine in force at t.
func (d *db) reservedBy(machine string, t time.Time) (string, bool) {
	for _, r := range d.sortedReservations() {
		if r.InForce(t) && slices.Contains(r.Machines, machine) {
			return r.Owner, true
		}
	}
	return "", false
}
