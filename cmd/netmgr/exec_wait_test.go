package main

import (
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestWaitingLine(t *testing.T) {
	ins := []client.Instance{
		{Index: 0, State: client.InstanceRunning, Machine: "stub1", PID: 42},
		{Index: 1, State: client.InstancePlaced, Machine: "stub2"},
		{Index: 2, State: client.InstanceQueued},
		{Index: 3, State: client.InstanceQueued},
		{Index: 4, State: client.InstanceQueued},
		{Index: 5, State: client.InstanceHeld},
	}
	why := []client.WhyInstance{
		{Instance: 2, Reason: "all 2 matching machines are busy: 2 machines have no free slot"},
		{Instance: 3, Reason: "all 2 matching machines are busy: 2 machines have no free slot"},
		{Instance: 4, Rejections: []client.Rejection{{Count: 3, Reason: "lack key sparc"}}},
		{Instance: 5, Reason: "held(dependency): waits for job 12 (running)"},
	}
	got := waitingLine(ins, map[int]bool{0: true}, why)
	want := "instance 1 placed on stub2, starting; " +
		"instances 2,3 queued: all 2 matching machines are busy: 2 machines have no free slot; " +
		"instance 4 queued: 3 machines lack key sparc; " +
		"instance 5 held(dependency): waits for job 12 (running)"
	if got != want {
		t.Errorf("waitingLine() =\n%s\nwant\n%s", got, want)
	}
}

func TestDescribeStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   client.Instance
		want string
	}{
		{"running", client.Instance{State: client.InstanceRunning, Machine: "stub1", PID: 42}, "running on stub1 pid 42"},
		{"exited since", client.Instance{State: client.InstanceExited, Machine: "stub1", PID: 42}, "running on stub1 pid 42"},
		{"failed to start", client.Instance{State: client.InstanceFailed, Machine: "stub2", Error: "exec: no such file"}, "failed on stub2: exec: no such file"},
		{"killed while queued", client.Instance{State: client.InstanceKilled}, "killed"},
		{"cancelled", client.Instance{State: client.InstanceCancelled, Reason: "job 3 failed"}, "cancelled (job 3 failed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeStart(tc.in); got != tc.want {
				t.Errorf("describeStart() = %q, want %q", got, tc.want)
			}
		})
	}
}
