package retention

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty/dutytest"
)

const tick = 250 * time.Millisecond

// The leader looks a few times per retention, between every leader tick
// and every minute.
func TestExpirerInterval(t *testing.T) {
	for _, tc := range []struct {
		retention time.Duration
		want      time.Duration
	}{
		{24 * time.Hour, maxEvery},
		{2 * time.Second, 500 * time.Millisecond},
		{100 * time.Millisecond, tick},
		{0, maxEvery}, // a count alone
	} {
		if got := New(dutytest.New(), tc.retention, 0, tick).every; got != tc.want {
			t.Errorf("retention %v: looks every %v, want %v", tc.retention, got, tc.want)
		}
	}
}

// A group with a server below level 32 gets no JobsExpire: the expirer
// stops before it reads the state or proposes, and looks again only after
// its interval.
func TestExpirerWaitsForTheGroup(t *testing.T) {
	h := dutytest.New()
	h.SetLevel(fsm.MailSentType)
	e := New(h, time.Hour, 0, tick)
	now := time.Now()
	e.Run(now)
	if want := now.Add(e.every); !e.next.Equal(want) {
		t.Errorf("next look at %v, want %v", e.next, want)
	}
	if got := h.Index(); got != 0 {
		t.Errorf("the expirer committed up to index %d, want nothing", got)
	}
	// Without a retention or a count the expirer never looks.
	off := New(dutytest.New(), 0, 0, tick)
	off.Run(now)
	if !off.next.IsZero() {
		t.Errorf("an expirer without retention planned a look at %v", off.next)
	}
}

// With nothing past the retention the expirer proposes nothing: a queued
// job is not finished, whatever its age.
func TestExpirerProposesOnlyWhatIsPast(t *testing.T) {
	h := dutytest.New()
	at := time.Now().Add(-time.Hour)
	h.MustApply(t, fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: fsm.JobSpec{
		Name: "j", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: 1,
	}})
	before := h.Index()
	New(h, time.Second, 1, tick).Run(time.Now())
	if got := h.Index(); got != before {
		t.Errorf("the expirer committed %d entries with nothing finished, want none", got-before)
	}
}
