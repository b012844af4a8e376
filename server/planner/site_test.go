package planner_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
	"github.com/netmgr/netmgr/server/policy"
)

// siteOrder is the jobs in the order a pass with prog visits them, and
// the failures it reported.
func siteOrder(v fsm.View, prog *policy.Program, now time.Time) ([]uint64, []error) {
	var got []uint64
	var errs []error
	planner.New(v, allUp(v), now).Site(prog, func(err error) { errs = append(errs, err) }).Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, _ *planner.Held) {
		if len(got) == 0 || got[len(got)-1] != it.JobID {
			got = append(got, it.JobID)
		}
	})
	return got, errs
}

// TestSitePriorityOrder: a script that puts short jobs first replaces
// fair share within the queue; the same on a restored replica and
// whatever the pass's clock; a script that fails gives fair share's
// order back and reports where it failed.
func TestSitePriorityOrder(t *testing.T) {
	f, apply := shareState(t, false)
	// Job 7 of carol, short; job 8 of carol, with no limit.
	apply(fsm.SubmitLimitsType, fsm.Submit{At: at.Add(3 * time.Minute), Owner: "carol", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: "q", TimeLimitSeconds: 60}})
	apply(fsm.SubmitType, fsm.Submit{At: at.Add(3 * time.Minute), Owner: "carol", Spec: fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: 1, Queue: "q"}})
	short, err := policy.Compile(`
def priority(job, user, usage, now):
    if job["time_limit"] > 0:
        return -job["time_limit"]
    return -1000000 - usage["user"]
`)
	if err != nil {
		t.Fatal(err)
	}
	now := at.Add(5 * time.Minute)
	want := []uint64{7, 6, 8, 2, 3, 4, 5} // short first, then by usage (alice used 60 s)
	for name, g := range map[string]*fsm.FSM{"leader": f, "restored": restoredCopy(t, f)} {
		g.Read(func(v fsm.View) {
			got, errs := siteOrder(v, short, now)
			later, _ := siteOrder(v, short, now.Add(1000*time.Hour))
			if !slices.Equal(got, want) || len(errs) != 0 {
				t.Errorf("%s: order %v (errors %v), want %v", name, got, errs, want)
			}
			if !slices.Equal(later, got) {
				t.Errorf("%s: order later %v, want %v: the script's now reads no clock", name, later, got)
			}
		})
	}
	// netstatus --why names the policy for alice's job 2, which carol's
	// and bob's later jobs passed.
	f.Read(func(v fsm.View) {
		var why string
		planner.New(v, allUp(v), now).Site(short, nil).Explain().Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, h *planner.Held) {
			if it.JobID == 2 && h != nil {
				why = h.Reason
			}
		})
		if want := "behind 3 instances the site policy ranks higher"; why != want {
			t.Errorf("why of job 2 = %q, want %q", why, want)
		}
	})
	broken, err := policy.Compile("def priority(job, user, usage, now):\n    return job['nope']\n")
	if err != nil {
		t.Fatal(err)
	}
	f.Read(func(v fsm.View) {
		got, errs := siteOrder(v, broken, now)
		if fair := order(v, now); !slices.Equal(got, fair) {
			t.Errorf("order with a failing script %v, want fair share's %v", got, fair)
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "line 2") {
			t.Errorf("errors %v, want one naming line 2", errs)
		}
	})
}

// restoredCopy is a new replica restored from a snapshot of f.
func restoredCopy(t *testing.T, f *fsm.FSM) *fsm.FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&sink{Writer: &buf}); err != nil {
		t.Fatal(err)
	}
	g := fsm.New()
	if err := g.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	return g
}
