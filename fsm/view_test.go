package fsm_test

import (
	"maps"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// TestViewUsage follows View.JobCounts and View.UsedMemoryMB through a
// job's life: place, register, term, restart, kill, leave, and restore.
func TestViewUsage(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	a.join("m2", "x86_64", 8)
	big := a.limitJob("big", 3, false, 0, 100) // job 1
	free := a.limitJob("free", 2, false, 0, 0) // job 2
	s := spec("again", 1)                      // job 3
	s.MemoryMB, s.Restart = 50, fsm.RestartAlways
	again := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID

	type usage struct {
		counts map[uint64]int
		mem    int64
	}
	steps := []struct {
		name   string
		do     func()
		m1, m2 usage
	}{
		{"nothing placed", func() {}, usage{nil, 0}, usage{nil, 0}},
		{"placed", func() {
			a.place(asg(big, 0, "m1"), asg(big, 1, "m1"), asg(free, 0, "m1"), asg(big, 2, "m2"), asg(again, 0, "m2"))
		}, usage{map[uint64]int{big: 2, free: 1}, 200}, usage{map[uint64]int{big: 1, again: 1}, 150}},
		{"dropped placement counts nothing", func() { a.place(asg(free, 1, "ghost")) },
			usage{map[uint64]int{big: 2, free: 1}, 200}, usage{map[uint64]int{big: 1, again: 1}, 150}},
		{"registered", func() { a.register(big, 0, "m1", 10) },
			usage{map[uint64]int{big: 2, free: 1}, 200}, usage{map[uint64]int{big: 1, again: 1}, 150}},
		{"term", func() { a.term(big, 0, "m1", 0) },
			usage{map[uint64]int{big: 1, free: 1}, 100}, usage{map[uint64]int{big: 1, again: 1}, 150}},
		{"stale term", func() { a.term(big, 0, "m2", 0) },
			usage{map[uint64]int{big: 1, free: 1}, 100}, usage{map[uint64]int{big: 1, again: 1}, 150}},
		{"restarted", func() { a.term(again, 0, "m2", 1) },
			usage{map[uint64]int{big: 1, free: 1}, 100}, usage{map[uint64]int{big: 1}, 100}},
		{"restarted attempt placed", func() {
			a.mustOK(fsm.PlaceType, fsm.Place{At: at(70), Assignments: []fsm.Assignment{{JobID: again, Instance: 0, Attempt: 2, Machine: "m1", Key: fsm.AnyKey}}})
		}, usage{map[uint64]int{big: 1, free: 1, again: 1}, 150}, usage{map[uint64]int{big: 1}, 100}},
		{"kill only marks", func() { a.mustOK(fsm.KillType, fsm.Kill{At: at(80), JobID: big, By: "alice"}) },
			usage{map[uint64]int{big: 1, free: 1, again: 1}, 150}, usage{map[uint64]int{big: 1}, 100}},
		{"killed instance ends", func() { a.term(big, 1, "m1", 0) },
			usage{map[uint64]int{free: 1, again: 1}, 50}, usage{map[uint64]int{big: 1}, 100}},
		{"machine leaves", func() { a.leave("m2", "gone") },
			usage{map[uint64]int{free: 1, again: 1}, 50}, usage{nil, 0}},
		{"lost instance's late term", func() { a.term(big, 2, "m2", 0) },
			usage{map[uint64]int{free: 1, again: 1}, 50}, usage{nil, 0}},
		{"database lowers memory under work", func() {
			a.load(fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1", Attrs: map[string]float64{"mem": 10}}}})
		}, usage{map[uint64]int{free: 1, again: 1}, 50}, usage{nil, 0}},
		{"last ends", func() {
			a.term(free, 0, "m1", 0)
			a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(90), JobID: again, Instance: 0, Attempt: 2, Machine: "m1", Signal: "KILL", ExitCode: -1})
			a.mustOK(fsm.KillType, fsm.Kill{At: at(91), JobID: again, By: "alice"})
		}, usage{nil, 0}, usage{nil, 0}},
	}
	for _, st := range steps {
		st.do()
		for _, m := range []struct {
			name string
			want usage
		}{{"m1", st.m1}, {"m2", st.m2}} {
			counts, mem := a.usage(m.name)
			if !maps.Equal(counts, m.want.counts) || mem != m.want.mem {
				t.Errorf("%s: %s: got JobCounts %v UsedMemoryMB %d, want %v and %d", st.name, m.name, counts, mem, m.want.counts, m.want.mem)
			}
			// A restored replica counts the same.
			b := &applier{tb: t, f: restored(t, snapshotBytes(t, a.f))}
			if bc, bm := b.usage(m.name); !maps.Equal(bc, counts) || bm != mem {
				t.Errorf("%s: %s after restore: got JobCounts %v UsedMemoryMB %d, want %v and %d", st.name, m.name, bc, bm, counts, mem)
			}
		}
	}
	if counts, mem := a.usage("ghost"); len(counts) != 0 || mem != 0 {
		t.Errorf("unknown machine: got JobCounts %v UsedMemoryMB %d, want none and 0", counts, mem)
	}
}
