package server

import (
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleQueues lists the queues with their limits and counts.
func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	var out []client.Queue
	now := time.Now()
	s.fsm.Read(func(v fsm.View) {
		for _, q := range v.Queues() {
			out = append(out, queueToWire(q, now))
		}
	})
	s.writeJSON(w, http.StatusOK, out)
}

// handleLicenses lists the pool's licences with how many running
// instances hold, in declaration order.
func (s *Server) handleLicenses(w http.ResponseWriter, r *http.Request) {
	out := []client.License{}
	s.fsm.Read(func(v fsm.View) {
		for _, l := range v.Licenses() {
			out = append(out, client.License{Name: l.Name, Count: l.Count, Used: l.Used})
		}
	})
	s.writeJSON(w, http.StatusOK, out)
}

// handleSetQueue declares a queue or changes its limits (admins only).
func (s *Server) handleSetQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	user, ok := s.requireAdmin(w, r, "set queue "+name)
	if !ok {
		return
	}
	var q client.Queue
	if err := decodeBody(r, &q); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read queue: %w", err))
		return
	}
	decl := queueFromWire(name, q)
	// The API sets limits; the queue's owner policy, kill grace,
	// placement and preemption policies, per-user limits, interactive mark
	// and prime time are the database file's (add_q), so a change of
	// limits keeps them. The limits set are the queue's own, in force
	// outside its prime-time window.
	s.fsm.Read(func(v fsm.View) {
		if qv, ok := v.Queue(name); ok {
			old := qv.Declared
			decl.Prime = old.Prime
			decl.Owner = maps.Clone(old.Owner)
			decl.KillGraceSeconds = old.KillGraceSeconds
			decl.Policy = old.Policy
			decl.Preempt = old.Preempt
			decl.MaxUserActive, decl.MaxUserQueued = old.MaxUserActive, old.MaxUserQueued
			decl.Interactive = old.Interactive
		}
	})
	res, err := s.apply(fsm.SetQueueType, fsm.SetQueue{At: time.Now().UTC(), By: user, Queue: decl})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), res.Err)
		return
	}
	var out client.Queue
	s.fsm.Read(func(v fsm.View) {
		qv, _ := v.Queue(name)
		out = queueToWire(qv, time.Now())
	})
	s.writeJSON(w, http.StatusOK, out)
}

// handleRemoveQueue removes an empty queue (admins only).
func (s *Server) handleRemoveQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	user, ok := s.requireAdmin(w, r, "remove queue "+name)
	if !ok {
		return
	}
	res, err := s.apply(fsm.RemoveQueueType, fsm.RemoveQueue{At: time.Now().UTC(), By: user, Name: name})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), res.Err)
		return
	}
	s.writeJSON(w, http.StatusOK, struct{}{})
}
