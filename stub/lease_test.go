package stub

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// TestNoRestartableStartOutsideTheLease: a stub whose lease has run out
// (no server granted a renewal) refuses to start restartable attempts, the
// ones the servers may have started elsewhere, and still starts the rest.
func TestNoRestartableStartOutsideTheLease(t *testing.T) {
	s := newTestStub(t, Config{})
	s.lease.deadline.Store(int64(supervisor.BootNow() - time.Second))
	c := stubClient(t, s)
	req := client.StartRequest{JobID: 1, Instance: 0, Attempt: 2, Binary: "/bin/true", Restartable: true}
	_, err := startAlone(t.Context(), c, req)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Fatalf("got %v, want 409: outside its lease", err)
	}
	req.JobID, req.Restartable = 2, false
	if _, err := startAlone(t.Context(), c, req); err != nil {
		t.Errorf("non-restartable start outside the lease: %v, want it started", err)
	}
}

// TestNoRestartableStartSentBeforeALeaseLoss: a restartable Start the
// leader sent before the machine last lost its lease (an older machine
// index than the last renewal reported) is refused even though the lease
// holds again: it may have sat in a frozen machine's socket while its
// instance started elsewhere, and so is one with no index (0) once a
// renewal reported one. A current one and a non-restartable one start.
func TestNoRestartableStartSentBeforeALeaseLoss(t *testing.T) {
	s := newTestStub(t, Config{})
	s.lease.deadline.Store(int64(supervisor.BootNow() + time.Hour))
	s.lease.raiseMachineIndex(10)
	s.lease.raiseMachineIndex(7) // a late answer lowers nothing
	c := stubClient(t, s)
	tests := []struct {
		name         string
		job          uint64
		restartable  bool
		machineIndex uint64
		refused      bool
	}{
		{"sent before the loss", 1, true, 9, true},
		{"sent after", 2, true, 10, false},
		{"no index", 3, true, 0, true},
		{"not restartable", 4, false, 9, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := startAlone(t.Context(), c, client.StartRequest{JobID: tc.job, Attempt: 1, Binary: "/bin/true",
				Restartable: tc.restartable, MachineIndex: tc.machineIndex})
			var apiErr *client.APIError
			if refused := errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict; refused != tc.refused || (!refused && err != nil) {
				t.Errorf("got %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// TestStatementVouchesAfterTheLease: GET /v1/outage says the lease ran
// out while less than client.OutageVouchWithin of it is left, and, once
// a renewal ended that, until the keeper's vouchUntil; a stub that does
// not know its place in the pool says nothing either way.
func TestStatementVouchesAfterTheLease(t *testing.T) {
	s := newTestStub(t, Config{})
	c := stubClient(t, s)
	k := s.lease
	now := supervisor.BootNow()
	tests := []struct {
		name            string
		position        int
		left, vouchLeft time.Duration
		want            bool
	}{
		{"lease holds", 1, time.Hour, 0, false},
		{"lease nearly out", 1, client.OutageVouchWithin / 2, 0, true},
		{"lease out", 1, -time.Second, 0, true},
		{"renewed, vouching", 1, time.Hour, time.Hour, true},
		{"renewed, vouching over", 1, time.Hour, -time.Millisecond, false},
		{"no place in the pool", 0, -time.Second, time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k.learn(client.LeaseResponse{Position: tc.position, PoolSize: 3, OutageGraceMS: time.Hour.Milliseconds()})
			k.deadline.Store(int64(now + tc.left))
			k.vouchUntil.Store(int64(now + tc.vouchLeft))
			st, err := c.OutageStatement(t.Context())
			if err != nil {
				t.Fatalf("GET /v1/outage: %v", err)
			}
			if st.Expired != tc.want {
				t.Errorf("Expired = %v, want %v", st.Expired, tc.want)
			}
			// Only the lease itself starts a vouching: the vouching does
			// not extend itself at the next renewal.
			if got, want := k.runsOut(supervisor.BootNow()), tc.position > 0 && tc.left < client.OutageVouchWithin; got != want {
				t.Errorf("runsOut = %v, want %v", got, want)
			}
		})
	}
}

// TestRenewRound checks a round's length and the leader's patience in it
// at the renewal intervals a leader grants: 0.5 s keeps renewTimeout and
// leaseLeaderPatience; a larger pool's interval lengthens the patience
// to half of it, the others keeping what they had; an interval past the
// longest a leader grants changes nothing more.
func TestRenewRound(t *testing.T) {
	for _, tc := range []struct{ every, round, patience time.Duration }{
		{0, renewTimeout, leaseLeaderPatience},
		{defaultRenewEvery, renewTimeout, leaseLeaderPatience},
		{time.Second, renewTimeout, leaseLeaderPatience},
		{2 * time.Second, 1500 * time.Millisecond, time.Second},
		{3 * time.Second, 2 * time.Second, 1500 * time.Millisecond},
		{time.Hour, 2 * time.Second, 1500 * time.Millisecond},
	} {
		round, patience := renewRound(tc.every)
		if round != tc.round || patience != tc.patience {
			t.Errorf("renewRound(%v) = %v, %v; want %v, %v", tc.every, round, patience, tc.round, tc.patience)
		}
	}
}
