package queue

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestNoStarvation runs the model of sim_test.go for an hour: four
// two-unit machines the large job can use and one one-unit machine it
// cannot; twenty small jobs at the start, then one more every 3 s (more
// than the cluster finishes, so small jobs always wait), each running
// 20-60 s in queue "small" (run limit 60 s), or as the row says, with
// every third a quick job (2-10 s, run limit 10 s) in some rows; at 300 s
// a large job of two instances, each asking a whole two-unit machine for
// 100 s, in queue "big" (run limit 300 s).
//
// With EASY backfill the large job must have started both instances by
//
//	bound = T0 + (ceil(B/U) + 1) * L
//
// where T0 is its submission, B the small instances ahead of it in queue
// order then, U = 9 the units of the cluster and L = 60 s the longest a
// small instance may run (its run limit, or its longest run time when the
// queue has none). Why: until the large job is the head, every freed unit
// goes to the first waiting instance in order, and every unit frees at
// least once every L, so the B instances ahead are placed by
// T0 + ceil(B/U)*L. From then on the large job is the head: the machines it
// competes for hold only small instances, all ending by then + L, and a
// later job takes one of them only if it ends by the shadow, which is no
// later. With the naive rule (place whatever fits), every unit that frees
// is taken by a small instance before a machine empties, so the large job
// never starts within the hour.
func TestNoStarvation(t *testing.T) {
	const (
		seed  = 4
		units = 9 // 4 machines of 2 units, 1 of 1
	)
	tests := []struct {
		name           string
		protect        bool
		bigPriority    int
		smallLimit     int64 // seconds; 0 = no run limit
		minRun, maxRun int   // seconds, of a small instance
		gap            time.Duration
		quickEvery     int // every n-th small job is a quick one (limit 10 s)
	}{
		{name: "naive, large job in a higher-priority queue", protect: false, bigPriority: 10, smallLimit: 60, minRun: 20, maxRun: 60, gap: 3 * time.Second},
		{name: "naive, equal priorities", protect: false, bigPriority: 0, smallLimit: 60, minRun: 20, maxRun: 60, gap: 3 * time.Second},
		{name: "naive, short small jobs", protect: false, bigPriority: 10, smallLimit: 30, minRun: 10, maxRun: 30, gap: 2 * time.Second},
		{name: "backfill, large job in a higher-priority queue", protect: true, bigPriority: 10, smallLimit: 60, minRun: 20, maxRun: 60, gap: 3 * time.Second},
		{name: "backfill, equal priorities", protect: true, bigPriority: 0, smallLimit: 60, minRun: 20, maxRun: 60, gap: 3 * time.Second},
		{name: "backfill, small jobs without a run limit", protect: true, bigPriority: 10, smallLimit: 0, minRun: 20, maxRun: 60, gap: 3 * time.Second},
		{name: "backfill, short small jobs", protect: true, bigPriority: 10, smallLimit: 30, minRun: 10, maxRun: 30, gap: 2 * time.Second},
		{name: "naive, with quick jobs", protect: false, bigPriority: 10, smallLimit: 60, minRun: 20, maxRun: 60, gap: 3 * time.Second, quickEvery: 3},
		{name: "backfill, quick jobs fill the large job's machines", protect: true, bigPriority: 10, smallLimit: 60, minRun: 20, maxRun: 60, gap: 3 * time.Second, quickEvery: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limits := map[string]Limits{
				"small": {MaxRunSeconds: tt.smallLimit},
				"quick": {MaxRunSeconds: 10},
				"big":   {Priority: tt.bigPriority, MaxRunSeconds: 300},
			}
			st := &stream{
				queue: "small", gap: tt.gap, minRun: tt.minRun, maxRun: tt.maxRun, quickEvery: tt.quickEvery,
				rng: rand.New(rand.NewPCG(seed, seed)),
			}
			s := newSim(tt.protect, limits, []int{2, 2, 2, 2, 1}, t0)
			for range 20 {
				st.arrive(s)
			}
			st.next = t0.Add(st.gap)
			arrive, horizon := t0.Add(300*time.Second), t0.Add(time.Hour)

			var large *simJob
			var ahead int
			s.run(st, horizon, arrive, func() {
				large = s.submit("big", 2, 100*time.Second, 100*time.Second)
				first := Item{JobID: large.id, Priority: tt.bigPriority, SubmitIndex: large.id}
				for _, j := range s.order {
					it := Item{JobID: j.id, Instance: j.placed, Priority: limits[j.queue].Priority, SubmitIndex: j.id}
					if j != large && j.placed < j.instances && Compare(it, first) < 0 {
						ahead += j.instances - j.placed
					}
				}
			})
			if large == nil {
				t.Fatal("the large job was never submitted")
			}
			if w := s.waiting() - (large.instances - large.placed); w == 0 {
				t.Fatalf("no small job waits at the horizon: the stream does not load the cluster")
			}
			if !tt.protect {
				if large.placed != 0 {
					t.Errorf("naive rule: large job started %d instances at %v, want none within %v",
						large.placed, large.started, horizon.Sub(t0))
				}
				t.Logf("naive: large job submitted at %v never started within %v; %d small instances finished",
					arrive.Sub(t0), horizon.Sub(t0), s.done)
				return
			}
			longest := time.Duration(tt.smallLimit) * time.Second // L
			if longest == 0 {
				longest = time.Duration(tt.maxRun) * time.Second
			}
			bound := arrive.Add(time.Duration((ahead+units-1)/units+1) * longest)
			if large.placed != large.instances {
				t.Fatalf("backfill: large job started %d of %d instances within %v, want all by %v",
					large.placed, large.instances, horizon.Sub(t0), bound.Sub(t0))
			}
			last := large.started[len(large.started)-1]
			if last.After(bound) {
				t.Errorf("backfill: large job's last instance started at %v, want by %v (B=%d)", last.Sub(t0), bound.Sub(t0), ahead)
			}
			head := s.firstHead[large.id]
			if shadow := s.firstShadow[large.id]; !shadow.IsZero() && last.After(shadow) {
				t.Errorf("backfill: large job's last instance started at %v, after the shadow %v computed when it became the head at %v",
					last.Sub(t0), shadow.Sub(t0), head.Sub(t0))
			}
			if tt.quickEvery > 0 && s.backfilled == 0 {
				t.Errorf("backfill: no quick job was backfilled onto the large job's machines, want some")
			}
			t.Logf("backfill: large job submitted at %v with %d instances ahead, head at %v, shadow %v, started at %v (bound %v); %d small instances finished, %d backfilled onto its machines",
				arrive.Sub(t0), ahead, head.Sub(t0), shadowText(s.firstShadow[large.id], t0), durations(large.started, t0), bound.Sub(t0), s.done, s.backfilled)
		})
	}
}

func shadowText(shadow, base time.Time) string {
	if shadow.IsZero() {
		return "unknown"
	}
	return shadow.Sub(base).String()
}

func durations(ts []time.Time, base time.Time) []time.Duration {
	d := make([]time.Duration, len(ts))
	for i, t := range ts {
		d[i] = t.Sub(base)
	}
	return d
}
