package main

import (
	"math"
	"testing"
	"time"
)

// TestStartRates takes the sustained rate from the first poll at a tenth
// of the slots started to the first at nine tenths, and the best rate
// between two polls anywhere, a slow start and tail included.
func TestStartRates(t *testing.T) {
	s := time.Second
	at := []time.Duration{1 * s, 2 * s, 3 * s, 4 * s, 5 * s, 6 * s, 7 * s}
	counts := []float64{0, 50, 150, 450, 750, 950, 1000}
	sustained, best := startRates(at, counts, 1000)
	// A tenth (100) is first reached at 3 s (150), nine tenths (900) at
	// 6 s (950): 800 in 3 s.
	if want := 800.0 / 3; sustained != want {
		t.Errorf("sustained = %v, want %v", sustained, want)
	}
	if best != 300 {
		t.Errorf("best = %v, want 300", best)
	}
	// Never reaching nine tenths leaves the sustained rate unmeasured.
	if sustained, best := startRates(at[:4], counts[:4], 1000); sustained != 0 || best != 300 {
		t.Errorf("cut short: sustained, best = %v, %v, want 0, 300", sustained, best)
	}
}

// TestLeaderMSPerStart takes the leader's CPU at rest from its CPU while
// the pool filled and spreads the rest over the starts; a fill cut short
// gives no figure.
func TestLeaderMSPerStart(t *testing.T) {
	r := poolPlacement{cores: 0.9, restCores: 0.2, filled: 10 * time.Second, started: 20000}
	// 0.7 cores for 10 s is 7,000 ms over 20,000 starts.
	if ms, ok := r.leaderMSPerStart(); !ok || math.Abs(ms-0.35) > 1e-9 {
		t.Errorf("leaderMSPerStart = %v, %v, want 0.35, true", ms, ok)
	}
	r.filled = 0
	if _, ok := r.leaderMSPerStart(); ok {
		t.Errorf("a fill cut short gave a figure")
	}
}
