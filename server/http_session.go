package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/fsm"
)

// sessionViewWait bounds how long a server whose view lags waits for a
// job, or its instance's start, that the client has seen already (a
// follower a few entries behind the leader that answered it).
const sessionViewWait = 5 * time.Second

// awaitStarted waits, for at most sessionViewWait, until this server's
// view knows job ref's instance with a machine; the checks that follow
// answer whatever it then sees.
func (s *Server) awaitStarted(r *http.Request, ref string, instance int) {
	deadline := time.NewTimer(sessionViewWait)
	defer deadline.Stop()
	for {
		_, changed := s.fsm.Watch()
		known := false
		s.fsm.Read(func(v fsm.View) {
			j, err := lookupJob(v, ref)
			known = err == nil && instance < len(j.Instances) && j.Instances[instance].Machine != "" &&
				j.Instances[instance].State != fsm.InstancePlaced
		})
		if known {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Sessions: GET /v1/jobs/{ref}/session?instance=N[&attempt=A] relays a
// client to the interactive session of an instance (package
// client/session), which its stub holds: the server checks that the
// caller may act on the job (owner or admin, 403 otherwise), finds the
// instance's attempt and machine in its own view (any server relays, not
// only the leader, so a session goes on through whichever server is up),
// upgrades a connection to the stub's GET /v1/session over the cluster's
// TLS link, checking the stub's certificate, answers the client 101 and
// copies bytes both ways without reading them. With shell=1 it asks the
// stub for a new command in the running instance instead (netmgr shell,
// the stub's GET /v1/shell). The relay holds no state: when this server
// goes, the client reconnects through another and the two ends resume.
// event=opened or attached (the client's first connection) and the
// session's close are recorded as events (session_events.go).
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	instance, err := strconv.Atoi(q.Get("instance"))
	if err != nil || instance < 0 {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("session: instance=%q: not an instance number", q.Get("instance")))
		return
	}
	var attempt uint64
	if v := q.Get("attempt"); v != "" {
		if attempt, err = strconv.ParseUint(v, 10, 64); err != nil {
			s.writeError(w, http.StatusBadRequest, fmt.Errorf("session: attempt=%q: not an attempt number", v))
			return
		}
	}
	s.awaitStarted(r, r.PathValue("ref"), instance)
	shell := q.Get("shell") == "1"
	action := "attach to"
	if shell {
		action = "open a shell in"
	}
	id, user, ok := s.resolveControlled(w, r, action)
	if !ok {
		return
	}
	t, status, err := s.logTarget(id, instance)
	if err != nil {
		s.writeError(w, status, err)
		return
	}
	if attempt != 0 && attempt != t.ref.Attempt {
		s.writeError(w, http.StatusConflict, fmt.Errorf("session: instance %d of job %d is at attempt %d, not %d: its session ended with that attempt", instance, id, t.ref.Attempt, attempt))
		return
	}
	v := url.Values{}
	v.Set("job", strconv.FormatUint(id, 10))
	v.Set("instance", strconv.Itoa(instance))
	v.Set("attempt", strconv.FormatUint(t.ref.Attempt, 10))
	v.Set("by", user)
	path := "/v1/session?"
	if shell {
		path = "/v1/shell?"
		for _, a := range q["cmd"] {
			v.Add("cmd", a)
		}
		v.Set("tty", q.Get("tty"))
		v.Set("sid", q.Get("sid"))
	}
	scheme := "http://"
	var expect *pki.Identity
	if s.cfg.TLS != nil {
		scheme = "https://"
		expect = &pki.Identity{Role: pki.RoleStub, Name: t.machine}
	}
	tr, _ := s.hc.Transport.(*http.Transport)
	stubConn, err := client.DialUpgrade(r.Context(), tr, scheme+t.addr+path+v.Encode(), nil, expect)
	if err != nil {
		if apiErr, ok := err.(*client.APIError); ok {
			s.writeError(w, apiErr.Status, fmt.Errorf("%s", apiErr.Message))
			return
		}
		s.writeError(w, http.StatusBadGateway, fmt.Errorf("session: the stub of %s, which runs attempt %d, did not answer: %w", t.machine, t.ref.Attempt, err))
		return
	}
	conn, err := client.AcceptUpgrade(w)
	if err != nil {
		_ = stubConn.Close()
		s.log.Warn("session upgrade", "job", id, "err", err)
		return
	}
	s.log.Info("session relayed", "job", id, "instance", instance, "attempt", t.ref.Attempt, "machine", t.machine, "by", user, "shell", shell)
	ev := fsm.SessionEvent{By: user, JobID: id, Instance: instance, Attempt: t.ref.Attempt, Machine: t.machine, Shell: shell}
	if kind := q.Get("event"); kind == fsm.SessionOpened || kind == fsm.SessionAttached {
		ev.Kind = kind
		s.noteSession(ev)
	}
	client.Splice(conn, stubConn)
	s.watchSessionEnd(ev, scheme+t.addr+path+v.Encode()+"&probe=1")
}
