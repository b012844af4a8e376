package server

import (
	"testing"
	"time"
)

func TestReconcilePaceSpacesPasses(t *testing.T) {
	p := newReconcilePace(50 * time.Millisecond)
	defer p.stop()
	t0 := time.Now()
	if !p.event(t0) {
		t.Fatal("the first event was held back: nothing ran before it")
	}
	p.ran(t0)
	if p.event(t0.Add(10 * time.Millisecond)) {
		t.Fatal("an event 10 ms after a pass ran at once: the gap is 50 ms")
	}
	if p.event(t0.Add(20 * time.Millisecond)) {
		t.Fatal("a second event within the gap ran at once")
	}
	select {
	case <-p.C():
		p.fired()
	case <-time.After(5 * time.Second):
		t.Fatal("the held-back event never came due")
	}
	select {
	case <-p.C():
		t.Fatal("two events within one gap armed the timer twice")
	case <-time.After(100 * time.Millisecond):
	}
	if !p.event(t0.Add(60 * time.Millisecond)) {
		t.Fatal("an event past the gap was held back")
	}
	p.ran(t0.Add(60 * time.Millisecond))
	if p.event(t0.Add(70 * time.Millisecond)) {
		t.Fatal("an event after the timer fired and a pass ran was not held back")
	}
	select {
	case <-p.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the timer was not armed again after it fired")
	}
}

// The gap is reconcileGap up to 2,000 machines and grows with the pool
// past them, to at most reconcileGapMax.
func TestReconcileGapGrowsWithThePool(t *testing.T) {
	for _, c := range []struct {
		machines int
		want     time.Duration
	}{
		{0, reconcileGap}, {400, reconcileGap}, {2000, reconcileGap},
		{4000, 200 * time.Millisecond}, {10000, 500 * time.Millisecond},
		{20000, reconcileGapMax}, {100000, reconcileGapMax},
	} {
		if got := reconcileGapFor(c.machines); got != c.want {
			t.Errorf("gap at %d machines = %v, want %v", c.machines, got, c.want)
		}
	}
	p := newReconcilePace(reconcileGap)
	defer p.stop()
	t0 := time.Now()
	p.fit(10000)
	p.ran(t0)
	if p.event(t0.Add(400 * time.Millisecond)) {
		t.Error("at 10,000 machines an event 400 ms after a pass ran at once: the gap is 500 ms")
	}
	if !p.event(t0.Add(500 * time.Millisecond)) {
		t.Error("at 10,000 machines an event 500 ms after a pass was held back")
	}
}
