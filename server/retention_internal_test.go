package server

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// The leader looks a few times per retention, between every leader tick
// and every minute.
func TestJobExpirerInterval(t *testing.T) {
	for _, tc := range []struct {
		retention time.Duration
		want      time.Duration
	}{
		{24 * time.Hour, maxExpiryEvery},
		{2 * time.Second, 500 * time.Millisecond},
		{100 * time.Millisecond, leaderTick},
		{0, maxExpiryEvery}, // a count alone
	} {
		s := &Server{cfg: Config{JobRetention: tc.retention}}
		if got := newJobExpirer(s).every; got != tc.want {
			t.Errorf("retention %v: looks every %v, want %v", tc.retention, got, tc.want)
		}
	}
}

// A group with a server below level 32 gets no JobsExpire: the expirer
// stops before it reads the state or proposes (this Server has neither an
// FSM nor Raft, so either would panic), and looks again only after its
// interval.
func TestJobExpirerWaitsForTheGroup(t *testing.T) {
	s := &Server{cfg: Config{JobRetention: time.Hour}}
	s.groupLevel.Store(uint32(fsm.MailSentType))
	e := newJobExpirer(s)
	now := time.Now()
	e.run(now)
	if want := now.Add(e.every); !e.next.Equal(want) {
		t.Errorf("next look at %v, want %v", e.next, want)
	}
	// Without a retention or a count the expirer never looks.
	off := newJobExpirer(&Server{})
	off.run(now)
	if !off.next.IsZero() {
		t.Errorf("an expirer without retention planned a look at %v", off.next)
	}
}
