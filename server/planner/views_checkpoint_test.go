package planner

import (
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func TestCheckpointMachine(t *testing.T) {
	ck := fsm.JobSpec{Checkpoint: []string{"state"}, CheckpointExit: 85}
	ended := func(state string, code int, sig string) []fsm.AttemptEnd {
		return []fsm.AttemptEnd{{Attempt: 1, Machine: "m1", State: fsm.InstanceFailed, ExitCode: 1},
			{Attempt: 2, Machine: "m2", State: state, ExitCode: code, Signal: sig}}
	}
	for _, tc := range []struct {
		name    string
		spec    fsm.JobSpec
		history []fsm.AttemptEnd
		want    string
	}{
		{"after a checkpoint exit: its machine", ck, ended(fsm.InstanceExited, 85, ""), "m2"},
		{"after a failure: any", ck, ended(fsm.InstanceFailed, 3, ""), ""},
		{"after a signal: any", ck, ended(fsm.InstanceSignaled, 85, "KILL"), ""},
		{"a first attempt: any", ck, nil, ""},
		{"a job without checkpoints: any", fsm.JobSpec{}, ended(fsm.InstanceExited, 85, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &fsm.Job{Spec: tc.spec}
			in := &fsm.Instance{Attempt: 3, History: tc.history}
			if got := checkpointMachine(j, in); got != tc.want {
				t.Errorf("checkpointMachine = %q, want %q", got, tc.want)
			}
			if got := matchRequest(j, in).Prefer; got != tc.want {
				t.Errorf("matchRequest(...).Prefer = %q, want %q", got, tc.want)
			}
		})
	}
}
