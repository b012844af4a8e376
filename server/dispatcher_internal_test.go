package server

import (
	"testing"
	"time"
)

// The dispatcher's soft memory: a send is due once, not again while in
// flight or once acknowledged, again after a failure's backoff, and
// forgotten once a pass no longer finds it owed, unless it is in flight.
func TestSendStates(t *testing.T) {
	now := time.Now()
	m := make(map[attemptKey]*sendState)
	a, b := attemptKey{JobID: 1, Attempt: 1}, attemptKey{JobID: 2, Attempt: 1}

	st := owe(m, a, 1)
	if !due(st, now) {
		t.Fatal("a new send is not due")
	}
	st.inflight = true
	if due(owe(m, a, 2), now) {
		t.Error("a send in flight is due again")
	}
	st.inflight, st.failures, st.retryAt = false, 1, now.Add(time.Second)
	if due(st, now) || !due(st, now.Add(2*time.Second)) {
		t.Error("a failed send must wait out its backoff, then be due")
	}
	st.acked = true
	if due(st, now.Add(time.Hour)) {
		t.Error("an acknowledged send is due again")
	}

	owe(m, b, 2).inflight = true
	forget(m, 3) // neither owed in pass 3
	if _, ok := m[a]; ok {
		t.Error("a send no longer owed was kept")
	}
	if _, ok := m[b]; !ok {
		t.Error("a send in flight was forgotten")
	}
}
