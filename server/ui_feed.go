package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/ui"
)

// The dashboard's live feed (server/ui): one Hub per server, fed once by
// this server, streamed to every open page. Two sources feed it: Raft's
// leader observations here (so "leader lost" shows while no leader can
// commit anything), and the events this server applies.

// uiLeaderObserver publishes the leader changes this server's Raft sees.
// Raft calls the filter on its own goroutines; Publish does not block and
// CurrentTerm reads an atomic. The filter drops every observation, so no
// channel or goroutine is needed.
func (s *Server) uiLeaderObserver() *raft.Observer {
	var (
		mu   sync.Mutex // Raft observes from its loop and from Shutdown
		last raft.ServerID
	)
	return raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		lo, ok := o.Data.(raft.LeaderObservation)
		if !ok {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if lo.LeaderID == last {
			return false
		}
		term := s.raft.CurrentTerm()
		if lo.LeaderID == "" {
			s.hub.Publish(ui.Event{
				Key: fmt.Sprintf("lost-%s-%d", last, term), Kind: "leader_lost",
				Text: fmt.Sprintf("leader lost (was %s), seen by %s", last, s.cfg.Name), At: time.Now(),
			})
		} else {
			s.hub.Publish(ui.Event{
				Key: fmt.Sprintf("elected-%s-%d", lo.LeaderID, term), Kind: "leader_elected",
				Text:   fmt.Sprintf("leader elected %s, term %d", lo.LeaderID, term),
				Leader: string(lo.LeaderID), Term: term, At: time.Now(),
			})
		}
		last = lo.LeaderID
		return false
	})
}

// seedHub publishes the last ui.RingSize events of this server's history,
// oldest first, so that a restarted server's timeline starts where it
// stopped rather than empty. It returns the index of the last one (0
// when the history is empty or unreadable: the timeline then starts from
// what the state applies). The Raft observer's leader_lost events are
// not in the history; the elections are, as the leader-elected events
// each new leader commits.
func (s *Server) seedHub() uint64 {
	evs, err := s.hist.db.LastEvents(ui.RingSize)
	if err != nil {
		s.log.Warn("dashboard timeline starts empty", "err", err)
		return 0
	}
	var last uint64
	for _, e := range evs {
		s.hub.Publish(uiEvent(fsm.Event{Index: e.Index, At: e.At, Kind: e.Kind, Job: e.Job, Instance: e.Instance,
			Attempt: e.Attempt, Machine: e.Machine, Detail: e.Detail}))
		last = e.Index
	}
	return last
}

// feedHub publishes the events this server applies after index seeded
// (what seedHub published), from the state's in-memory ring (no history
// read), until the server stops.
func (s *Server) feedHub(seeded uint64) {
	after := seeded
	s.fsm.Read(func(v fsm.View) {
		if evs := v.EventsSince(after); len(evs) > 0 && seeded == 0 {
			// Start with the recent past, not the whole ring.
			first := max(0, len(evs)-100)
			after = evs[first].Index - 1
		}
	})
	for {
		_, changed := s.fsm.Watch()
		var evs []fsm.Event
		s.fsm.Read(func(v fsm.View) { evs = v.EventsSince(after) })
		for _, e := range evs {
			s.hub.Publish(uiEvent(e))
			after = e.Index
		}
		select {
		case <-changed:
		case <-s.ctx.Done():
			return
		}
	}
}

// uiEvent is a state event as the timeline shows it.
func uiEvent(e fsm.Event) ui.Event {
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(e.Kind, "-", " "))
	if e.Job != 0 {
		fmt.Fprintf(&b, " job %d", e.Job)
		if e.Instance >= 0 {
			fmt.Fprintf(&b, ".%d", e.Instance)
		}
	}
	if e.Machine != "" {
		fmt.Fprintf(&b, " on %s", e.Machine)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	return ui.Event{
		Key: fmt.Sprintf("i%d-%s-%d-%d-%d-%s", e.Index, e.Kind, e.Job, e.Instance, e.Attempt, e.Machine), At: e.At, Kind: e.Kind,
		Text: b.String(), Index: e.Index, Job: e.Job, Instance: e.Instance, Machine: e.Machine,
	}
}

// peerHTTP returns the API addresses of the group's servers as gossip
// knows them, the origins whose pages may use this server (ui.CORS).
func (s *Server) peerHTTP() []string {
	var out []string
	for _, m := range s.gossip.servers() {
		if m.HTTP != "" {
			out = append(out, m.HTTP)
		}
	}
	return out
}

// uiRoutes registers the dashboard: the page and sign-in are public, the
// event stream and whoami need a user, as the API does.
func (s *Server) uiRoutes(mux *http.ServeMux) {
	sessions := &ui.Sessions{
		Verify:   func(token string) (string, error) { return s.tokenUser(token, time.Now()) },
		Secure:   s.cfg.TLS != nil,
		Insecure: s.cfg.TLS == nil,
	}
	toPage := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	}
	mux.HandleFunc("GET /{$}", toPage)
	mux.HandleFunc("GET /ui", toPage)
	mux.Handle("GET /ui/", ui.Static())
	mux.HandleFunc("POST /ui/login", sessions.Login)
	mux.HandleFunc("POST /ui/logout", sessions.Logout)
	mux.HandleFunc("GET /ui/whoami", s.forUser(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r)
		ui.WriteJSON(w, http.StatusOK, ui.Identity{User: p.User, Via: p.Via, Insecure: p.Insecure})
	}))
	mux.HandleFunc("GET /ui/events", s.forUser(s.limitStreams(alwaysStream, func(w http.ResponseWriter, r *http.Request) {
		s.hub.Stream(w, r, s.ctx.Done())
	})))
}

// uiPublic reports whether a request for path may go without credentials
// (or with a stale cookie): / and /ui (which send the browser to the
// page), the page's files, and the sign-in and -out.
func uiPublic(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet && (p == "/" || p == "/ui" || (strings.HasPrefix(p, "/ui/") && p != "/ui/events" && p != "/ui/whoami")):
		return true
	case r.Method == http.MethodPost && (p == "/ui/login" || p == "/ui/logout"):
		return true
	}
	return false
}
