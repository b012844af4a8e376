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
// request that finds the bucket empty is answered 429 with Retry-After,
// the whole seconds until a token is there; the client waits that long
// and sends it again (package client). Root on a pool machine and the
// database's admin_ids are exempt. Buckets idle for userBucketIdle are
// forgotten: by then they are full again, so nothing is lost.

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

// userBucket is one user's bucket and when it was last taken from.
type userBucket struct {
	lim  *rate.Limiter
	last time.Time
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
			if now.Sub(b.last) >= max(userBucketIdle, l.fillTime()) {
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
	b.last = now
	res := b.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
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
		secs := max(int(math.Ceil(wait.Seconds())), 1)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.refuseLimit(w, r, p, &denial{http.StatusTooManyRequests, denyRateLimited,
			fmt.Errorf("%w: %s sent more than %g requests a second (bursts of %d), this server's limit per user; retry after %d s, or ask the admins to raise the servers' --user-rate and --user-burst",
				errRateLimited, p.User, float64(lim.limit), lim.burst, secs)})
	})
}
