package stub

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestOutboxSurvivesRestart checks that events no server took stay in the
// outbox across a restart and are delivered, in order, by the next stub.
func TestOutboxSurvivesRestart(t *testing.T) {
	down := newFakeServer(t, http.StatusServiceUnavailable)
	dataDir, execDir := t.TempDir(), t.TempDir()
	s1 := newTestStub(t, Config{DataDir: dataDir, ExecDir: execDir, Servers: []string{down.addr()}})
	c1 := stubClient(t, s1)
	var reqs []client.StartRequest
	for job := uint64(1); job <= 3; job++ {
		req := client.StartRequest{JobID: job, Attempt: 1, Binary: "/bin/true"}
		reqs = append(reqs, req)
		mustStart(t, c1, req)
	}
	testwait.For(t, waitTimeout, "six events in the outbox", func() bool {
		es, err := s1.out.Pending(100)
		return err == nil && len(es) == 6
	})
	testwait.For(t, waitTimeout, "a delivery attempt", func() bool { return len(down.receivedOf(keyOf(reqs[0]))) > 0 })
	if err := s1.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	up := newFakeServer(t, 0)
	s2 := newTestStub(t, Config{DataDir: dataDir, ExecDir: execDir, Servers: []string{up.addr()}})
	for _, req := range reqs {
		evs := up.waitTerm(t, keyOf(req))
		if len(evs) != 2 || evs[0].Kind != client.ChildRegister || evs[0].PID <= 0 {
			t.Errorf("events of %s = %+v, want REGISTER then TERM", keyOf(req), evs)
		}
	}
	testwait.For(t, waitTimeout, "an empty outbox", func() bool {
		es, err := s2.out.Pending(100)
		return err == nil && len(es) == 0
	})

	// The new stub knows the attempts the old one started, and that they
	// ended: a Signal is no error and reaches nothing.
	c2 := stubClient(t, s2)
	mustStart(t, c2, reqs[0])
	if err := c2.Signal(context.Background(), client.SignalRequest{JobID: 1, Attempt: 1}); err != nil {
		t.Errorf("Signal of an ended attempt of an earlier stub = %v, want nil", err)
	}
	err := c2.Signal(context.Background(), client.SignalRequest{JobID: 99, Attempt: 1})
	if !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Signal of an unknown attempt = %v, want ErrNotFound", err)
	}
	if evs := up.events(keyOf(reqs[0])); len(evs) != 2 {
		t.Errorf("events after a repeated Start = %+v, want the first two only", evs)
	}
}

// TestOutboxDefiniteAnswers checks that answers which say "do not resend"
// remove the event.
func TestOutboxDefiniteAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		stale  bool
	}{
		{name: "stale", stale: true},
		{name: "rejected", status: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.status)
			srv.stale = tt.stale
			s := newTestStub(t, Config{Servers: []string{srv.addr()}})
			req := client.StartRequest{JobID: 1, Attempt: 1, Binary: "/bin/true"}
			mustStart(t, stubClient(t, s), req)
			testwait.For(t, waitTimeout, "both events sent", func() bool { return len(srv.receivedOf(keyOf(req))) == 2 })
			testwait.For(t, waitTimeout, "an empty outbox", func() bool {
				es, err := s.out.Pending(100)
				return err == nil && len(es) == 0
			})
		})
	}
}
