package fsm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// TestSubmitJobPriorityRange: a Submit's job priority is kept within
// MinJobPriority to MaxJobPriority; one outside is refused naming the
// range, and one inside is kept in the job's spec.
func TestSubmitJobPriorityRange(t *testing.T) {
	a := newApplier(t)
	for _, n := range []int{fsm.MinJobPriority, -1, 5, fsm.MaxJobPriority} {
		res := a.apply(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: withPriority(spec("p", 1), n)})
		if res.Err != nil {
			t.Fatalf("priority %d: %v", n, res.Err)
		}
		var got int
		a.f.Read(func(v fsm.View) {
			j, _ := v.Job(res.JobID)
			got = j.Spec.Priority
		})
		if got != n {
			t.Errorf("priority %d: job has %d", n, got)
		}
	}
	for _, n := range []int{fsm.MinJobPriority - 1, fsm.MaxJobPriority + 1} {
		res := a.apply(fsm.SubmitType, fsm.Submit{At: at(2), Owner: "alice", Spec: withPriority(spec("p", 1), n)})
		if !errors.Is(res.Err, fsm.ErrInvalidSpec) || !strings.Contains(res.Err.Error(), "between -1000 and 1000") {
			t.Errorf("priority %d: got %v, want ErrInvalidSpec naming -1000 to 1000", n, res.Err)
		}
	}
}
