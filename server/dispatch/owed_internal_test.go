package dispatch

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// TestOwedSignalPreempt: a victim stopped for a requeue preemption is
// owed its job's warning signal (SIGTERM without one) with the grace
// before SIGKILL, as a restart is; one lent by a suspend preemption is
// owed SIGSTOP, and SIGCONT once resumed; a kill asked meanwhile wins.
func TestOwedSignalPreempt(t *testing.T) {
	grace := 7 * time.Second
	for _, tc := range []struct {
		name  string
		warn  string
		in    fsm.Instance
		what  string
		sig   string
		grace int64
	}{
		{"requeue", "", fsm.Instance{State: fsm.InstanceRunning, Preempt: fsm.PreemptRequeue, PreemptedBy: 9}, "preempt", "TERM", 7000},
		{"requeue with a warning signal", "USR1", fsm.Instance{State: fsm.InstanceRunning, Preempt: fsm.PreemptRequeue, PreemptedBy: 9}, "preempt", "USR1", 7000},
		{"killed while stopping", "", fsm.Instance{State: fsm.InstanceRunning, Preempt: fsm.PreemptRequeue, KillRequested: true}, "kill", "TERM", 7000},
		{"lent", "", fsm.Instance{State: fsm.InstanceSuspended, Preempt: fsm.PreemptSuspend, PreemptedBy: 9, SuspendIndex: 5}, "stop", "STOP", 0},
		{"resumed", "", fsm.Instance{State: fsm.InstanceRunning, SuspendIndex: 5, ResumeIndex: 8}, "cont", "CONT", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &fsm.Job{KillSignal: "TERM", Spec: fsm.JobSpec{WarnSignal: tc.warn}}
			key, sig, g, ok := owedSignal(j, &tc.in, grace)
			if !ok || key.what != tc.what || sig != tc.sig || g != tc.grace {
				t.Errorf("got %q %s grace %d (owed %v), want %q %s grace %d", key.what, sig, g, ok, tc.what, tc.sig, tc.grace)
			}
		})
	}
}
