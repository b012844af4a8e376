package lease

import (
	"testing"
	"time"
)

// TestRestartHoldBack: a restarting machine is back only once it echoes a
// token issued after its restart was committed; tokens of before, which
// the stopping stub may still hold, prove nothing.
func TestRestartHoldBack(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	lt := NewTable(since, nil)
	old := lt.Renew("m1", since.Add(time.Second), nil, nil, 0, 1, 0)
	committed := time.Now()
	lt.Hold("m1", committed, 30*time.Second)
	if got := lt.RestartGrace("m1"); got != 30*time.Second {
		t.Errorf("restart grace %v, want the granted 30s", got)
	}
	// The old stub's last renewal, in flight, echoes an old token.
	fresh := lt.Renew("m1", committed.Add(time.Millisecond), nil, old, 0, 1, 0)
	if lt.Back("m1") {
		t.Fatal("back on a token issued before the restart")
	}
	// The new stub echoes the answer it got after the restart.
	lt.Renew("m1", committed.Add(time.Second), nil, fresh, 0, 1, 0)
	if !lt.Back("m1") {
		t.Error("not back on a token issued after the restart")
	}
}

// TestRestartHoldNewLeader: a leader that did not grant the restart
// assumes the longest grace, and counts any token of its own as issued
// after the restart.
func TestRestartHoldNewLeader(t *testing.T) {
	since := time.Now()
	lt := NewTable(since, nil)
	if got := lt.RestartGrace("m1"); got != MaxRestartGrace {
		t.Errorf("restart grace %v, want MaxRestartGrace", got)
	}
	if lt.RestartExpired("m1", since.Add(MaxRestartGrace)) {
		t.Error("expired before MaxRestartGrace and the margin")
	}
	if !lt.RestartExpired("m1", since.Add(MaxRestartGrace+Margin+time.Millisecond)) {
		t.Error("not expired after MaxRestartGrace and the margin")
	}
	tok := lt.Renew("m1", since.Add(time.Second), nil, nil, 0, 1, 0)
	if lt.Back("m1") {
		t.Fatal("back without echoing a token")
	}
	lt.Renew("m1", since.Add(2*time.Second), nil, tok, 0, 1, 0)
	if !lt.Back("m1") {
		t.Error("not back on a token of this leadership")
	}
}
