package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func policyOf(f *fsm.FSM) *fsm.Policy {
	var p *fsm.Policy
	f.Read(func(v fsm.View) { p = v.Policy() })
	return p
}

func lastEvent(f *fsm.FSM) fsm.Event {
	var e []fsm.Event
	f.Read(func(v fsm.View) { e = v.EventsSince(0) })
	return e[len(e)-1]
}

// TestPolicyLoadClearError: a load stores the source with its index,
// time and admin; a clear removes it (a second is stale); an error only
// records its event; an empty script or unknown op changes nothing.
func TestPolicyLoadClearError(t *testing.T) {
	a := newApplier(t)
	src := "def admit(job, user):\n    return None\n"
	res := a.mustOK(fsm.PolicyLoadType, fsm.PolicyLoad{At: at(1), Op: fsm.PolicyOpLoad, By: "root", Source: src})
	want := fsm.Policy{Source: src, By: "root", LoadIndex: res.Index, LoadedAt: at(1)}
	if got := policyOf(a.f); got == nil || *got != want {
		t.Fatalf("policy = %+v, want %+v", got, want)
	}
	if e := lastEvent(a.f); e.Kind != fsm.EventPolicyLoaded || e.Detail != "site policy loaded by root (2 lines)" {
		t.Errorf("event = %+v", e)
	}
	for _, bad := range []fsm.PolicyLoad{{At: at(2), Op: fsm.PolicyOpLoad, By: "root", Source: "  \n"}, {At: at(2), Op: "explode"}} {
		if res := a.apply(fsm.PolicyLoadType, bad); !errors.Is(res.Err, fsm.ErrInvalidPolicy) {
			t.Errorf("%+v: err = %v, want ErrInvalidPolicy", bad, res.Err)
		}
	}
	if got := policyOf(a.f); *got != want {
		t.Errorf("a refused load changed the policy to %+v", got)
	}
	a.mustOK(fsm.PolicyLoadType|fsm.IgnoreUnknownFlag, fsm.PolicyLoad{At: at(3), Op: fsm.PolicyOpError, Error: "site policy priority, line 3: boom", Repeats: 4})
	if e := lastEvent(a.f); e.Kind != fsm.EventPolicyError || e.Detail != "site policy priority, line 3: boom (and 4 more like it)" {
		t.Errorf("error event = %+v", e)
	}
	if got := policyOf(a.f); *got != want {
		t.Errorf("an error changed the policy to %+v", got)
	}
	// Snapshot and restore keep it.
	if got := policyOf(restored(t, snapshotBytes(t, a.f))); got == nil || *got != want {
		t.Errorf("restored policy = %+v, want %+v", got, want)
	}
	a.mustOK(fsm.PolicyLoadType, fsm.PolicyLoad{At: at(4), Op: fsm.PolicyOpClear, By: "root"})
	if got := policyOf(a.f); got != nil {
		t.Errorf("cleared policy = %+v", got)
	}
	if e := lastEvent(a.f); e.Kind != fsm.EventPolicyCleared || !strings.Contains(e.Detail, "root") {
		t.Errorf("clear event = %+v", e)
	}
	if res := a.apply(fsm.PolicyLoadType, fsm.PolicyLoad{At: at(5), Op: fsm.PolicyOpClear, By: "root"}); !res.Stale {
		t.Errorf("a second clear = %+v, want stale", res)
	}
	if got := policyOf(restored(t, snapshotBytes(t, a.f))); got != nil {
		t.Errorf("restored cleared policy = %+v", got)
	}
}
