package server

import (
	"fmt"
	"net/http"
	"sync"
)

// Open streams per user: GET /v1/jobs/{ref}/logs (every one streams from
// a stub), GET /v1/jobs/{ref}/session (a relayed interactive session),
// GET /v1/events?follow=1 and the dashboard's GET /ui/events hold a
// request, a goroutine and, for logs and sessions, a connection to a stub
// for as long as they last. Each server counts the ones it serves for each
// user (after leaderRead, so a follower's redirect is not counted) and
// refuses the one past the limit with 429 and no Retry-After: it is not
// a matter of waiting a second, and the client shows it at once.

// streamCounter counts each user's open streams. Safe for concurrent use.
type streamCounter struct {
	max int // <= 0: no limit

	mu   sync.Mutex // guards open
	open map[string]int
}

func newStreamCounter(limit int) *streamCounter {
	return &streamCounter{max: limit, open: make(map[string]int)}
}

// acquire counts a stream of user's open and reports true, or reports
// false when user has max open already. A true is paired with release.
func (c *streamCounter) acquire(user string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max > 0 && c.open[user] >= c.max {
		return false
	}
	c.open[user]++
	return true
}

// release counts a stream of user's closed.
func (c *streamCounter) release(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[user]--; c.open[user] <= 0 {
		delete(c.open, user)
	}
}

// alwaysStream is the isStream of a route every request of which is a
// stream.
func alwaysStream(*http.Request) bool { return true }

// followStream is the isStream of a route that streams with ?follow=1.
func followStream(r *http.Request) bool {
	f := r.URL.Query().Get("follow")
	return f != "" && f != "0"
}

// limitStreams runs h, counting the request as one of its user's open
// streams while it lasts when isStream says it is one, and refuses it
// with 429 when the user has as many open as the limit allows.
func (s *Server) limitStreams(isStream func(*http.Request) bool, h http.HandlerFunc) http.HandlerFunc {
	c := s.limits.streams
	return func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r)
		if c.max <= 0 || !firstHop(p) || !isStream(r) {
			h(w, r)
			return
		}
		if !c.acquire(p.User) {
			s.refuseLimit(w, r, p, &denial{http.StatusTooManyRequests, denyTooManyStreams,
				fmt.Errorf("%w: %s has %d log, event and session streams open at server %s, this server's limit per user; close some (netmgr logs -f, netmgr events -f, interactive sessions, dashboard pages), or ask the admins to raise the servers' --user-streams",
					errTooManyStreams, p.User, c.max, s.cfg.Name)})
			return
		}
		defer c.release(p.User)
		h(w, r)
	}
}
