package fsm_test

import (
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// reserve applies a Reserve; the result may carry an error.
func (a *applier) reserve(owner string, from, until time.Time, machines ...string) *fsm.Result {
	a.tb.Helper()
	return a.apply(fsm.ReserveType, fsm.Reserve{At: at(0), Owner: owner, Machines: machines, From: from, Until: until})
}

// mustReserve is reserve failing the test on a refusal; it returns the id.
func (a *applier) mustReserve(owner string, from, until time.Time, machines ...string) uint64 {
	a.tb.Helper()
	res := a.reserve(owner, from, until, machines...)
	if res.Err != nil {
		a.tb.Fatalf("reserve %v for %s: got error %v, want nil", machines, owner, res.Err)
	}
	return res.ReservationID
}

// reservations returns copies of View.Reservations.
func (a *applier) reservations() []fsm.Reservation {
	var out []fsm.Reservation
	a.f.Read(func(v fsm.View) {
		for _, r := range v.Reservations() {
			c := *r
			c.Machines = slices.Clone(r.Machines)
			out = append(out, c)
		}
	})
	return out
}

func TestReserve(t *testing.T) {
	var never time.Time
	tests := []struct {
		name string
		// existing are reservations made first: bob holds m1 from at(100)
		// until at(200) (id 1) unless a test says otherwise.
		existing     func(a *applier)
		owner        string
		machines     []string
		from, until  time.Time
		wantErr      error
		wantID       uint64
		wantMachines []string
	}{
		{"a window", nil, "alice", []string{"m2"}, at(100), at(200), nil, 2, []string{"m2"}},
		{"machines sorted and deduplicated", nil, "alice", []string{"m3", "m2", "m3"}, at(0), at(10), nil, 2, []string{"m2", "m3"}},
		{"open-ended", nil, "alice", []string{"m2"}, at(0), never, nil, 2, []string{"m2"}},
		{"a down machine", func(a *applier) { a.leave("m3", "gone") }, "alice", []string{"m3"}, at(0), at(10), nil, 2, []string{"m3"}},
		{"the same user may overlap", nil, "bob", []string{"m1"}, at(150), at(250), nil, 2, []string{"m1"}},
		{"the same user, same window", nil, "bob", []string{"m1", "m2"}, at(100), at(200), nil, 2, []string{"m1", "m2"}},
		{"another user right after", nil, "alice", []string{"m1"}, at(200), at(300), nil, 2, []string{"m1"}},
		{"another user right before", nil, "alice", []string{"m1"}, at(50), at(100), nil, 2, []string{"m1"}},
		{"another user, open-ended after", nil, "alice", []string{"m1"}, at(200), never, nil, 2, []string{"m1"}},
		{"another user overlapping the start", nil, "alice", []string{"m1"}, at(50), at(101), fsm.ErrReserved, 0, nil},
		{"another user overlapping the end", nil, "alice", []string{"m1"}, at(199), at(300), fsm.ErrReserved, 0, nil},
		{"another user inside", nil, "alice", []string{"m1"}, at(120), at(130), fsm.ErrReserved, 0, nil},
		{"another user around", nil, "alice", []string{"m1"}, at(0), at(1000), fsm.ErrReserved, 0, nil},
		{"another user, open-ended before", nil, "alice", []string{"m1"}, at(0), never, fsm.ErrReserved, 0, nil},
		{"another user's open-ended reservation", func(a *applier) { a.mustReserve("carol", at(500), never, "m2") },
			"alice", []string{"m2"}, at(10000), at(10001), fsm.ErrReserved, 0, nil},
		{"one machine of several taken refuses all", nil, "alice", []string{"m2", "m1"}, at(150), at(160), fsm.ErrReserved, 0, nil},
		{"after an unreserve", func(a *applier) { a.mustOK(fsm.UnreserveType, fsm.Unreserve{IDs: []uint64{1}}) },
			"alice", []string{"m1"}, at(150), at(160), nil, 2, []string{"m1"}},
		{"unknown machine", nil, "alice", []string{"m2", "ghost"}, at(0), at(10), fsm.ErrNoSuchMachine, 0, nil},
		{"no owner", nil, "", []string{"m2"}, at(0), at(10), fsm.ErrInvalidSpec, 0, nil},
		{"no machines", nil, "alice", nil, at(0), at(10), fsm.ErrInvalidSpec, 0, nil},
		{"empty window", nil, "alice", []string{"m2"}, at(10), at(10), fsm.ErrInvalidSpec, 0, nil},
		{"window ends before it starts", nil, "alice", []string{"m2"}, at(10), at(9), fsm.ErrInvalidSpec, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			for _, m := range []string{"m1", "m2", "m3", "m4"} {
				a.join(m, "x86_64", 2)
			}
			if id := a.mustReserve("bob", at(100), at(200), "m1"); id != 1 {
				t.Fatalf("first reservation: got id %d, want 1", id)
			}
			if tc.existing != nil {
				tc.existing(a)
			}
			before := stateBytes(t, a.f)
			prior := a.reservations()
			res := a.reserve(tc.owner, tc.from, tc.until, tc.machines...)
			wantErr(t, res.Err, tc.wantErr)
			if tc.wantErr != nil {
				if res.ReservationID != 0 {
					t.Errorf("got ReservationID %d, want 0", res.ReservationID)
				}
				assertUnchanged(t, a.f, before)
				// A refusal uses no id.
				if id := a.mustReserve("zed", at(0), at(1), "m4"); id != uint64(len(prior))+1 {
					t.Errorf("next reservation: got id %d, want %d", id, len(prior)+1)
				}
				return
			}
			if res.ReservationID != tc.wantID {
				t.Errorf("got ReservationID %d, want %d", res.ReservationID, tc.wantID)
			}
			rs := a.reservations()
			if len(rs) != len(prior)+1 {
				t.Fatalf("got %d reservations, want %d", len(rs), len(prior)+1)
			}
			r := rs[len(rs)-1]
			want := fsm.Reservation{ID: tc.wantID, Owner: tc.owner, Machines: tc.wantMachines, From: tc.from, Until: tc.until, CreateIndex: res.Index}
			if r.ID != want.ID || r.Owner != want.Owner || !slices.Equal(r.Machines, want.Machines) || !r.From.Equal(want.From) || !r.Until.Equal(want.Until) || r.CreateIndex != want.CreateIndex {
				t.Errorf("got reservation %+v, want %+v", r, want)
			}
			// It survives a snapshot, and ids continue after a restore.
			b := &applier{tb: t, f: restored(t, snapshotBytes(t, a.f)), next: a.next}
			if got := b.reservations(); len(got) != len(rs) || got[len(got)-1].ID != r.ID {
				t.Errorf("after restore: got %+v, want %+v", got, rs)
			}
			if id := b.mustReserve("zed", at(0), at(1), "m4"); id != tc.wantID+1 {
				t.Errorf("after restore: next reservation got id %d, want %d", id, tc.wantID+1)
			}
		})
	}
}

func TestUnreserve(t *testing.T) {
	tests := []struct {
		name      string
		ids       []uint64
		wantEnded []uint64
		wantLeft  []uint64
	}{
		{"one", []uint64{2}, []uint64{2}, []uint64{1, 3}},
		{"several, in the order given", []uint64{3, 1}, []uint64{3, 1}, []uint64{2}},
		{"unknown ids are ignored", []uint64{7, 2, 0}, []uint64{2}, []uint64{1, 3}},
		{"a repeated id ends once", []uint64{1, 1}, []uint64{1}, []uint64{2, 3}},
		{"only unknown ids", []uint64{9}, nil, []uint64{1, 2, 3}},
		{"none", nil, nil, []uint64{1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 2)
			a.join("m2", "x86_64", 2)
			a.join("m3", "x86_64", 2)
			a.mustReserve("bob", at(0), at(100), "m1")
			a.mustReserve("alice", at(0), at(100), "m2")
			a.mustReserve("bob", at(100), time.Time{}, "m1", "m2")
			before := stateBytes(t, a.f)
			res := a.mustOK(fsm.UnreserveType, fsm.Unreserve{At: at(1), By: "bob", IDs: tc.ids})
			if !slices.Equal(res.Ended, tc.wantEnded) {
				t.Errorf("got Ended %v, want %v", res.Ended, tc.wantEnded)
			}
			var left []uint64
			for _, r := range a.reservations() {
				left = append(left, r.ID)
			}
			if !slices.Equal(left, tc.wantLeft) {
				t.Errorf("got reservations %v left, want %v", left, tc.wantLeft)
			}
			if len(tc.wantEnded) == 0 {
				assertUnchanged(t, a.f, before)
			}
			// A retried unreserve ends nothing more.
			if again := a.mustOK(fsm.UnreserveType, fsm.Unreserve{At: at(2), By: "bob", IDs: tc.ids}); len(again.Ended) != 0 {
				t.Errorf("again: got Ended %v, want none", again.Ended)
			}
			// Ids are never reused.
			if id := a.mustReserve("zed", at(500), at(501), "m3"); id != 4 {
				t.Errorf("next reservation: got id %d, want 4", id)
			}
		})
	}
}

func TestReservedBy(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.join("m2", "x86_64", 2)
	a.mustReserve("bob", at(100), at(200), "m1")
	a.mustReserve("carol", at(300), time.Time{}, "m1", "m2")
	tests := []struct {
		machine string
		when    time.Time
		want    string // "" for none
	}{
		{"m1", at(99), ""},
		{"m1", at(100), "bob"},
		{"m1", at(199), "bob"},
		{"m1", at(200).Add(-time.Nanosecond), "bob"},
		{"m1", at(200), ""},
		{"m1", at(299), ""},
		{"m1", at(300), "carol"},
		{"m1", at(1 << 20), "carol"},
		{"m2", at(150), ""},
		{"m2", at(300), "carol"},
		{"ghost", at(150), ""},
	}
	for _, tc := range tests {
		var got string
		var ok bool
		a.f.Read(func(v fsm.View) { got, ok = v.ReservedBy(tc.machine, tc.when) })
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ReservedBy(%s, %v): got %q %v, want %q", tc.machine, tc.when.Sub(t0), got, ok, tc.want)
		}
	}
}

// placeAt proposes assignments in one Place stamped when.
func (a *applier) placeAt(when time.Time, as ...fsm.Assignment) *fsm.Result {
	a.tb.Helper()
	return a.mustOK(fsm.PlaceType, fsm.Place{At: when, PlannedAtIndex: a.next - 1, Assignments: as})
}

// TestPlaceReservation: a Place re-checks the reservations in force at its
// own time: another user's instance is dropped on a reserved machine from
// the window's first instant up to (not including) its end, the owner's is
// accepted, and an unreserved or expired reservation blocks no more.
func TestPlaceReservation(t *testing.T) {
	tests := []struct {
		name    string
		reserve func(a *applier)
		owner   string // of the job placed
		when    time.Time
		machine string
		want    bool // accepted
	}{
		{"before the window", nil, "alice", at(99), "m1", true},
		{"at the window's start", nil, "alice", at(100), "m1", false},
		{"inside the window", nil, "alice", at(150), "m1", false},
		{"just before the window's end", nil, "alice", at(200).Add(-time.Nanosecond), "m1", false},
		{"at the window's end", nil, "alice", at(200), "m1", true},
		{"after the window: expired", nil, "alice", at(1000), "m1", true},
		{"the owner inside the window", nil, "bob", at(150), "m1", true},
		{"another machine", nil, "alice", at(150), "m2", true},
		{"unreserved", func(a *applier) { a.mustOK(fsm.UnreserveType, fsm.Unreserve{IDs: []uint64{1}}) }, "alice", at(150), "m1", true},
		{"open-ended", func(a *applier) { a.mustReserve("carol", at(300), time.Time{}, "m2") }, "alice", at(1 << 20), "m2", false},
		{"open-ended, its owner", func(a *applier) { a.mustReserve("carol", at(300), time.Time{}, "m2") }, "carol", at(1 << 20), "m2", true},
		{"two owners' back-to-back windows", func(a *applier) { a.mustReserve("carol", at(200), at(300), "m1") }, "bob", at(200), "m1", false},
		{"the second owner at the boundary", func(a *applier) { a.mustReserve("carol", at(200), at(300), "m1") }, "carol", at(200), "m1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			a.join("m2", "x86_64", 4)
			a.mustReserve("bob", at(100), at(200), "m1")
			if tc.reserve != nil {
				tc.reserve(a)
			}
			id := a.mustQueueJob(tc.owner, "", 1, 0)
			res := a.placeAt(tc.when, asg(id, 0, tc.machine))
			if got := len(res.Accepted) == 1; got != tc.want || res.Dropped+len(res.Accepted) != 1 {
				t.Errorf("got Accepted %v Dropped %d, want accepted %v", res.Accepted, res.Dropped, tc.want)
			}
		})
	}
}

// TestPlaceReservationMixed: one Place holding several users' instances
// for a reserved machine keeps only the owner's, and a stale or duplicated
// Place stamped before the window is judged at its own time.
func TestPlaceReservationMixed(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	a.mustReserve("bob", at(100), at(200), "m1")
	ann := a.mustQueueJob("ann", "", 2, 0)
	bob := a.mustQueueJob("bob", "", 2, 0)
	res := a.placeAt(at(150), asg(ann, 0, "m1"), asg(bob, 0, "m1"), asg(ann, 1, "m1"), asg(bob, 1, "m1"))
	if want := []fsm.Assignment{asg(bob, 0, "m1"), asg(bob, 1, "m1")}; !slices.Equal(res.Accepted, want) || res.Dropped != 2 {
		t.Errorf("got Accepted %v Dropped %d, want %v and 2", res.Accepted, res.Dropped, want)
	}
	// A plan made before the window and committed late keeps its own
	// time: the FSM judges it by Place.At.
	stale := encode(t, command{fsm.PlaceType, fsm.Place{At: at(99), PlannedAtIndex: 1, Assignments: []fsm.Assignment{asg(ann, 0, "m1")}}})
	if res := a.raw(stale); len(res.Accepted) != 1 {
		t.Errorf("plan stamped before the window: got Accepted %v, want it", res.Accepted)
	}
	// Its duplicate finds the instance placed.
	if res := a.raw(stale); len(res.Accepted) != 0 || res.Dropped != 1 {
		t.Errorf("duplicate: got Accepted %v Dropped %d, want none and 1", res.Accepted, res.Dropped)
	}
	if res := a.placeAt(at(150), asg(ann, 1, "m1")); len(res.Accepted) != 0 {
		t.Errorf("inside the window: got Accepted %v, want none", res.Accepted)
	}
	// What runs on the machine when the window opens is left alone.
	if in := a.instance(ann, 0); in.State != fsm.InstancePlaced {
		t.Errorf("got %s, want placed", in.State)
	}
}
