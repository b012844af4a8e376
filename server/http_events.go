package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// followCheck is how often a follow stream checks that its server still
// leads, so a deposed or partitioned leader ends the stream and the client
// reconnects to the new one.
const followCheck = time.Second

// handleEvents answers GET /v1/events?after=INDEX: the events after INDEX
// this server holds. With follow=1 it streams them as newline-delimited
// JSON, flushing after each batch, until the client goes away, the server
// stops or (for a consistent read) it no longer leads.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after uint64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			s.writeError(w, http.StatusBadRequest, fmt.Errorf("after=%q: not an index", a))
			return
		}
		after = n
	}
	if q.Get("follow") == "" || q.Get("follow") == "0" {
		s.writeJSON(w, http.StatusOK, s.eventsSince(after))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	check := time.NewTicker(followCheck)
	defer check.Stop()
	mustLead := !q.Has("stale")
	for {
		_, changed := s.fsm.Watch()
		evs := s.eventsSince(after)
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return // the client went away
			}
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Index
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-changed:
		case <-check.C:
			if mustLead && s.raft.State() != raft.Leader {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// eventsSince returns the events after index in wire form.
func (s *Server) eventsSince(index uint64) []client.Event {
	var evs []fsm.Event
	s.fsm.Read(func(v fsm.View) { evs = v.EventsSince(index) })
	out := make([]client.Event, len(evs))
	for i, e := range evs {
		out[i] = eventToWire(e)
	}
	return out
}
