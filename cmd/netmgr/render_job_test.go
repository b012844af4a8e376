package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// sampleDetailJob is a job with what netstatus JOB shows: requirements,
// a restart policy, a dependency, and instances running, retried, failed
// to start and queued.
func sampleDetailJob() client.Job {
	return client.Job{
		ID: 21, Name: "sim", Owner: "alice", State: client.JobRunning, SubmittedAt: t0,
		Spec: client.JobSpec{
			Name: "sim", Min: 4, Binaries: map[string]string{client.AnyKey: "/bin/sim"}, Args: []string{"-n", "3", "big run"},
			Keys: []string{"mathlab"}, MemoryMB: 2048, Queue: "short", Restart: client.RestartOnFailure, MaxRestarts: 3,
			AfterOK: []string{"20"}, Mail: "alice@example.org", MailType: []string{"end"},
		},
		Dependencies: []client.Dependency{{Kind: "afterok", JobID: 20, Name: "prep.alice", State: client.JobDone, Verdict: client.DepSatisfied}},
		Instances: []client.Instance{
			{Index: 0, Attempt: 1, State: client.InstanceRunning, Machine: "flute", PID: 4242, Queue: "short",
				PlacedAt: t0.Add(time.Second), StartedAt: t0.Add(2 * time.Second)},
			{Index: 1, Attempt: 3, State: client.InstanceExited, Machine: "viola", PID: 4250, Restarts: 1, Queue: "short",
				PlacedAt: t0.Add(20 * time.Second), StartedAt: t0.Add(21 * time.Second), EndedAt: t0.Add(80 * time.Second),
				UserMS: 51200, SysMS: 800, MaxRSSKB: 204800,
				History: []client.AttemptEnd{
					{Attempt: 1, Machine: "tuba", State: client.InstanceLost, Error: "the lease of machine tuba expired",
						PlacedAt: t0.Add(time.Second), StartedAt: t0.Add(2 * time.Second), EndedAt: t0.Add(9 * time.Second)},
					{Attempt: 2, Machine: "viola", State: client.InstanceFailed, ExitCode: 1,
						PlacedAt: t0.Add(10 * time.Second), StartedAt: t0.Add(11 * time.Second), EndedAt: t0.Add(14 * time.Second)},
				}},
			{Index: 2, Attempt: 1, State: client.InstanceFailed, Machine: "tuba", Queue: "short",
				Error: "exec: fork/exec /bin/sim: no such file or directory", PlacedAt: t0.Add(time.Second), EndedAt: t0.Add(time.Second)},
			{Index: 3, Attempt: 1, State: client.InstanceQueued, Queue: "short"},
		},
	}
}

func TestFilterJobs(t *testing.T) {
	jobs := sampleJobs()
	ids := func(js []client.Job) []uint64 {
		var out []uint64
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	tests := []struct {
		name string
		f    jobFilter
		want []uint64
	}{
		{"none", jobFilter{}, []uint64{7, 3, 15, 9, 12}},
		{"user", jobFilter{user: "bob"}, []uint64{9, 12}},
		{"queue", jobFilter{queue: "NEW_Q"}, []uint64{15}},
		{"default queue", jobFilter{queue: client.DefaultQueue}, []uint64{7, 3, 9, 12}},
		{"name", jobFilter{names: []string{"mixed"}}, []uint64{3}},
		{"name.owner and id", jobFilter{names: []string{"test1.tclark", "12"}}, []uint64{7, 12}},
		{"job or instance state", jobFilter{states: []string{client.JobKilled}}, []uint64{3, 15, 9}},
		{"instance state", jobFilter{states: []string{client.InstanceLost}}, []uint64{3}},
		{"user and state", jobFilter{user: "alice", states: []string{client.InstanceRunning}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(filterJobs(jobs, tt.f)); !slices.Equal(got, tt.want) {
				t.Errorf("filterJobs = %v, want %v", got, tt.want)
			}
		})
	}
	// An instance-state filter keeps only those instances of the job.
	got := filterJobs(jobs, jobFilter{states: []string{client.InstanceLost}})
	if len(got) != 1 || len(got[0].Instances) != 1 || got[0].Instances[0].Index != 5 {
		t.Errorf("instances kept by --state lost: %+v, want instance 5 only", got)
	}
}

// TestStatusFilterUsage: bad filters are refused before any server is
// asked.
func TestStatusFilterUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"netstatus", "--state", "bogus"}, `--state "bogus": not a job or instance state`},
		{[]string{"netstatus", "-m", "--user", "alice"}, "--name, --user, --state and --queue select jobs: give them with -j"},
		{[]string{"netstatus", "-m", "sim"}, "give only one of -j, -m, -s, -q, -r, --licenses, --why and a JOB"},
		{[]string{"netstatus", "sim", "other"}, `unexpected argument "other"`},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
}
