package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The API request rate per user: a token bucket per user (rate.Limiter)
// at each server, taken from by every request the server is the first to
// receive for that user (firstHop), before the request is routed. A
// request that finds the bucket empty is held for refuseHold (a tarpit,
// so that a client that ignores the answer cannot make the server refuse
// thousands of requests a second) and answered 429 with Retry-After, the
// whole seconds from then until a token is there (0 when one is); the
// client waits that long and sends it again (package client). Root on a pool machine and the
// database's admin_ids are exempt. Buckets idle for userBucketIdle are
// forgotten: by then they are full again, so nothing is lost.

// refuseHold is how long a refusal is held before it is answered, and
// maxHeld how many of one user's refusals are held at once (more are
// answered at once). A client that ignores Retry-After then gets one
// refusal a second per request it keeps in flight, rather than as many
// as the server can write: the flood suite measured 3,000 refusals a
// second from 8 such clients, which cost the servers 0.6 of a core.
const (
	refuseHold = time.Second
	maxHeld    = 64
)

// userBucketIdle is how long an unused bucket is kept. It must be at
// least burst/rate (2 s by default), the time an empty bucket takes to
// fill.
const userBucketIdle = time.Minute

// rateLimiter holds one token bucket per user. Safe for concurrent use.
type rateLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex // guards buckets and swept
	buckets map[string]*userBucket
	swept   time.Time
}

// userBucket is one user's bucket, when it was last taken from, and how
// many of the user's refusals are held.
type userBucket struct {
	lim  *rate.Limiter
	last time.Time
	held int
}

func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	return &rateLimiter{limit: rate.Limit(perSecond), burst: max(burst, 1), buckets: make(map[string]*userBucket)}
}

// take takes a token from user's bucket at now. It returns zero when the
// request may go on, else how long until a token will be there (the
// request is then not counted). It never blocks.
func (l *rateLimiter) take(user string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= userBucketIdle {
		for u, b := range l.buckets {
			if b.held == 0 && now.Sub(b.last) >= max(userBucketIdle, l.fillTime()) {
				delete(l.buckets, u)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[user]
	if !ok {
		b = &userBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[user] = b
	}
	// Callers read the clock before they wait for l.mu, so times can
	// arrive out of order; rate.Limiter would refill again for a time it
	// has already counted (the flood suite saw 3.6 times the rate).
	now = later(now, b.last)
	b.last = now
	if b.lim.AllowN(now, 1) {
		return 0
	}
	return l.untilLocked(b, now)
}

// hold reports whether one more of user's refusals may be held, and
// counts it held if so; a true is paired with unhold.
func (l *rateLimiter) hold(user string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[user]
	if !ok || b.held >= maxHeld {
		return false
	}
	b.held++
	return true
}

// unhold counts one of user's held refusals answered.
func (l *rateLimiter) unhold(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[user]; ok {
		b.held--
	}
}

// until is how long from now until user's bucket has a token (zero when
// it has one), without taking it.
func (l *rateLimiter) until(user string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[user]
	if !ok {
		return 0
	}
	return l.untilLocked(b, later(now, b.last))
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// untilLocked is until for b, with l.mu held. It never returns zero for
// a bucket without a token, however close the next one is.
func (l *rateLimiter) untilLocked(b *userBucket, now time.Time) time.Duration {
	tokens := b.lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return max(time.Duration((1-tokens)/float64(l.limit)*float64(time.Second)), time.Nanosecond)
}

// fillTime is how long an empty bucket takes to fill.
func (l *rateLimiter) fillTime() time.Duration {
	return time.Duration(float64(l.burst) / float64(l.limit) * float64(time.Second))
}

// users is how many buckets the limiter holds, for tests.
func (l *rateLimiter) users() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// limitRate refuses, with 429 and Retry-After, a user's request that
// finds their bucket empty; other requests go on to h.
func (s *Server) limitRate(h http.Handler) http.Handler {
	lim := s.limits.rate
	if lim == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r)
		if !firstHop(p) {
			h.ServeHTTP(w, r)
			return
		}
		wait := lim.take(p.User, time.Now())
		if wait == 0 || s.limitExempt(p) {
			h.ServeHTTP(w, r)
			return
		}
		if lim.hold(p.User) {
			defer lim.unhold(p.User)
			t := time.NewTimer(refuseHold)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			case <-s.ctx.Done():
				t.Stop()
			}
			wait = lim.until(p.User, time.Now())
		}
		secs := int(math.Ceil(wait.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.refuseLimit(w, r, p, &denial{http.StatusTooManyRequests, denyRateLimited,
			fmt.Errorf("%w: %s sent more than %g requests a second (bursts of %d), this server's limit per user; retry after %d s, or ask the admins to raise the servers' --user-rate and --user-burst",
				errRateLimited, p.User, float64(lim.limit), lim.burst, secs)})
	})
}
