package cron

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty/dutytest"
)

// The firer commits one CronFire for a job that is due, answers with the
// next firing, and proposes nothing more for a time already decided; a
// job whose expression does not parse never fires.
func TestFirerFiresOnce(t *testing.T) {
	h := dutytest.New()
	at := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	spec := fsm.JobSpec{Name: "tick", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: 1, Cron: "@every 1m"}
	job := h.MustApply(t, fsm.SubmitEntryType(&spec), fsm.Submit{At: at, Owner: "alice", Spec: spec}).JobID
	f := New(h)

	if next := f.Fire(at.Add(30 * time.Second)); !next.Equal(at.Add(time.Minute)) {
		t.Errorf("before the first firing: next %v, want %v", next, at.Add(time.Minute))
	}
	before := h.Index()
	now := at.Add(time.Minute + time.Second)
	if next := f.Fire(now); !next.Equal(at.Add(2 * time.Minute)) {
		t.Errorf("after the first firing: next %v, want %v", next, at.Add(2*time.Minute))
	}
	if got := h.Index(); got != before+1 {
		t.Fatalf("the firing committed %d entries, want 1", got-before)
	}
	h.Read(func(v fsm.View) {
		j, ok := v.Job(job)
		if !ok || len(j.Cron.Runs) != 1 {
			t.Errorf("job %d after one firing: %+v", job, j)
		}
	})
	f.Fire(now)
	if got := h.Index(); got != before+1 {
		t.Errorf("a second Fire at the same time committed %d more entries, want none", got-before-1)
	}

	if f.schedule("not a schedule") != nil {
		t.Errorf("an expression that does not parse has a schedule")
	}
}
