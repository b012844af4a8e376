// Package warnlimit lets a repeated warning through once per period for
// each key (a peer's address, a member's name, a user) and counts the
// ones it held back, so that a peer that keeps trying is logged, but not
// thousands of times. Servers and stubs share it.
package warnlimit

import (
	"sync"
	"time"
)

// MaxKeys bounds the keys a Limiter remembers; past it, keys not let
// through within the period are forgotten.
const MaxKeys = 1024

// Limiter is one warning's limit. Safe for concurrent use.
type Limiter struct {
	every time.Duration

	mu   sync.Mutex // guards last and held
	last map[string]time.Time
	held map[string]int
}

// New returns a Limiter that lets the warning for a key through once
// every period.
func New(every time.Duration) *Limiter {
	return &Limiter{every: every, last: make(map[string]time.Time), held: make(map[string]int)}
}

// Allow reports whether the warning for key may be logged at now, and
// how many warnings for key it held back since the last one let through.
func (w *Limiter) Allow(key string, now time.Time) (ok bool, held int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, seen := w.last[key]; seen && now.Sub(last) < w.every {
		w.held[key]++
		return false, 0
	}
	if len(w.last) >= MaxKeys {
		for k, t := range w.last {
			if now.Sub(t) >= w.every {
				delete(w.last, k)
				delete(w.held, k)
			}
		}
	}
	held = w.held[key]
	w.last[key] = now
	delete(w.held, key)
	return true, held
}
