package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// Sessions in the events (fsm.SessionEvent, command level 41). The server
// that relays a client's session knows who the client is (it verified
// it) and records, through the leader, the session's opening (netexec's
// first connection, or netmgr shell's), its taking back (netmgr attach)
// and its close: the client says which of the first two its first
// connection is (event=opened or attached; a reconnection after a lost
// server says nothing), and when a relayed connection ends the server
// asks the stub, for a few seconds, whether the session still lives: a
// session gone is closed, one that lives was detached or goes on through
// another server, which records nothing. The stub tells only the first
// relay to ask that a session closed (404; the others get 410), so two
// relays whose connections end together record one close. The relay still reads none of
// the session's bytes. Until every server applies level 41 a session is
// only logged. Each is informational: a failure to record one is logged
// and changes nothing else.

// sessionProbeFor bounds how long a relay asks a stub whether a session
// whose connection ended has closed; sessionProbeEvery spaces the asks.
const (
	sessionProbeFor   = 3 * time.Second
	sessionProbeEvery = 100 * time.Millisecond
)

// noteSession records ev in the background.
func (s *Server) noteSession(ev fsm.SessionEvent) {
	ev.At = time.Now().UTC()
	go func() {
		if err := s.recordSession(s.ctx, ev); err != nil {
			s.log.Info("session event not recorded", "kind", ev.Kind, "job", ev.JobID, "by", ev.By, "err", err)
		}
	}()
}

// recordSession proposes ev on the leader, or posts it to the leader
// (POST /v1/sessions/events) from a follower.
func (s *Server) recordSession(ctx context.Context, ev fsm.SessionEvent) error {
	if s.raft.State() == raft.Leader {
		return s.proposeSession(ev)
	}
	_, addr, err := s.leaderHTTP()
	if err != nil {
		return fmt.Errorf("record session event: %w", err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("record session event: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.scheme()+addr+"/v1/sessions/events", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("record session event: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("record session event at the leader: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("record session event at the leader: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// proposeSession commits ev once every server applies it; before that
// it records nothing.
func (s *Server) proposeSession(ev fsm.SessionEvent) error {
	if !s.groupAppliesNow(fsm.SessionEventType) {
		return nil
	}
	res, err := s.apply(fsm.SessionEventType|fsm.IgnoreUnknownFlag, ev)
	if err != nil {
		return fmt.Errorf("record session event: %w", err)
	}
	if res.Err != nil {
		return fmt.Errorf("record session event: %w", res.Err)
	}
	return nil
}

// handleSessionEvent serves POST /v1/sessions/events, on the leader, for
// servers only: a follower that relays a session passes on its event.
func (s *Server) handleSessionEvent(w http.ResponseWriter, r *http.Request) {
	if !s.requireServer(w, r) {
		return
	}
	var ev fsm.SessionEvent
	if err := decodeBody(r, &ev); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read session event: %w", err))
		return
	}
	if err := s.proposeSession(ev); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, errNotLeader) {
			status = http.StatusServiceUnavailable
		}
		s.writeError(w, status, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// watchSessionEnd asks the stub at probeURL (its session or shell URL
// with probe=1), after a relayed connection of session ev ended, whether
// the session has closed, for at most sessionProbeFor, and records its
// close if the stub says this relay is the first to learn it.
func (s *Server) watchSessionEnd(ev fsm.SessionEvent, probeURL string) {
	deadline := time.Now().Add(sessionProbeFor)
	tick := time.NewTicker(sessionProbeEvery)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(s.ctx, sessionProbeFor)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, probeURL, nil)
		if err != nil {
			cancel()
			return
		}
		resp, err := s.hc.Do(req)
		cancel()
		if err != nil {
			return // the stub is gone: its sessions end with it, as its machine's events say
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusNotFound:
			ev.Kind = fsm.SessionClosed
			s.noteSession(ev)
			return
		case http.StatusNoContent:
		default:
			return
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-tick.C:
		case <-s.ctx.Done():
			return
		}
	}
}
