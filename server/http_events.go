package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/history"
)

// followCheck is how often a follow stream checks that its server still
// leads, so a deposed or partitioned leader ends the stream and the client
// reconnects to the new one.
const followCheck = time.Second

// handleEvents answers GET /v1/events?after=INDEX&since=TIME: the events
// after INDEX (and at or after TIME, RFC 3339) this server holds, from its
// history, which outlives restarts and leader changes. With follow=1 it streams them as newline-delimited
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
	since, err := queryTime(q.Get("since"), "since")
	if err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	if q.Get("follow") == "" || q.Get("follow") == "0" {
		evs, err := s.eventsSince(r.Context(), after, since)
		if err != nil {
			s.writeError(w, http.StatusInternalServerError, err)
			return
		}
		s.writeJSON(w, http.StatusOK, evs)
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
		changed := s.eventsChanged()
		evs, err := s.eventsSince(r.Context(), after, since)
		if err != nil {
			s.log.Error("events unreadable", "err", err)
			return
		}
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

// eventsChanged returns a channel closed when more events may be listed.
func (s *Server) eventsChanged() <-chan struct{} {
	if s.hist != nil {
		return s.hist.changed()
	}
	_, changed := s.fsm.Watch()
	return changed
}

// eventsSince returns the events after index, at or after since, in wire
// form: from the history, once it holds what the state has applied; from
// the database's in-memory ring on a server without a data dir.
func (s *Server) eventsSince(ctx context.Context, index uint64, since time.Time) ([]client.Event, error) {
	if s.hist == nil {
		var evs []fsm.Event
		s.fsm.Read(func(v fsm.View) { evs = v.EventsSince(index) })
		out := make([]client.Event, 0, len(evs))
		for _, e := range evs {
			if !e.At.Before(since) {
				out = append(out, eventToWire(e))
			}
		}
		return out, nil
	}
	s.historyCaughtUp(ctx)
	evs, err := s.hist.db.Events(history.EventFilter{After: index, Since: since})
	if err != nil {
		return nil, err
	}
	out := make([]client.Event, len(evs))
	for i, e := range evs {
		out[i] = eventToWireHistory(e)
	}
	return out, nil
}
