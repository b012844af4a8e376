package server

import (
	"strings"
	"testing"
	"time"
)

// TestRestartHoldBack: a restarting machine is back only once it echoes a
// token issued after its restart was committed; tokens of before, which
// the stopping stub may still hold, prove nothing.
func TestRestartHoldBack(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	lt := newLeaseTable(since)
	old := lt.renew("m1", since.Add(time.Second), nil, nil, 0, 1, 0)
	committed := time.Now()
	lt.hold("m1", committed, 30*time.Second)
	if got := lt.restartGrace("m1"); got != 30*time.Second {
		t.Errorf("restart grace %v, want the granted 30s", got)
	}
	// The old stub's last renewal, in flight, echoes an old token.
	fresh := lt.renew("m1", committed.Add(time.Millisecond), nil, old, 0, 1, 0)
	if lt.back("m1") {
		t.Fatal("back on a token issued before the restart")
	}
	// The new stub echoes the answer it got after the restart.
	lt.renew("m1", committed.Add(time.Second), nil, fresh, 0, 1, 0)
	if !lt.back("m1") {
		t.Error("not back on a token issued after the restart")
	}
}

// TestRestartHoldNewLeader: a leader that did not grant the restart
// assumes the longest grace, and counts any token of its own as issued
// after the restart.
func TestRestartHoldNewLeader(t *testing.T) {
	since := time.Now()
	lt := newLeaseTable(since)
	if got := lt.restartGrace("m1"); got != MaxRestartGrace {
		t.Errorf("restart grace %v, want MaxRestartGrace", got)
	}
	if lt.restartExpired("m1", since.Add(MaxRestartGrace)) {
		t.Error("expired before MaxRestartGrace and the margin")
	}
	if !lt.restartExpired("m1", since.Add(MaxRestartGrace+leaseMargin+time.Millisecond)) {
		t.Error("not expired after MaxRestartGrace and the margin")
	}
	tok := lt.renew("m1", since.Add(time.Second), nil, nil, 0, 1, 0)
	if lt.back("m1") {
		t.Fatal("back without echoing a token")
	}
	lt.renew("m1", since.Add(2*time.Second), nil, tok, 0, 1, 0)
	if !lt.back("m1") {
		t.Error("not back on a token of this leadership")
	}
}

// TestRestartGraceValidated: a restart grace outside [0, MaxRestartGrace]
// stops the server at start with the option named.
func TestRestartGraceValidated(t *testing.T) {
	for _, grace := range []time.Duration{-time.Second, MaxRestartGrace + time.Second} {
		c := Config{Name: "s1", InmemStore: true, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", RestartGrace: grace}
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "--restart-grace must be between 0 and 10m0s") {
			t.Errorf("restart grace %v: %v, want the option named", grace, err)
		}
	}
	c := Config{Name: "s1", InmemStore: true, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", RestartGrace: DefaultRestartGrace}
	if err := c.validate(); err != nil {
		t.Errorf("the default restart grace: %v", err)
	}
}
