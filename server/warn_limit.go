package server

import (
	"sync"
	"time"
)

// warnLimiter lets a repeated warning through once per period for each
// key (a peer's address, a member's name) and counts the ones it held
// back, so that a peer that keeps trying is logged, but not thousands of
// times. Safe for concurrent use.
type warnLimiter struct {
	every time.Duration

	mu   sync.Mutex // guards last and held
	last map[string]time.Time
	held map[string]int
}

// maxWarnKeys bounds the keys a warnLimiter remembers; past it, keys not
// logged within the period are forgotten.
const maxWarnKeys = 1024

func newWarnLimiter(every time.Duration) *warnLimiter {
	return &warnLimiter{every: every, last: make(map[string]time.Time), held: make(map[string]int)}
}

// allow reports whether the warning for key may be logged at now, and
// how many warnings for key it held back since the last one let through.
func (w *warnLimiter) allow(key string, now time.Time) (ok bool, held int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, seen := w.last[key]; seen && now.Sub(last) < w.every {
		w.held[key]++
		return false, 0
	}
	if len(w.last) >= maxWarnKeys {
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
