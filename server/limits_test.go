package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/trapstamp"
)

// TestJobTimeLimitWarnsThenKills runs a job with time=3s and
// signal=USR1@2 through real servers, stub and supervisor: the job's traps
// stamp the warning and the TERM, which come about the lead apart, and the
// instance ends killed(timeout).
func TestJobTimeLimitWarnsThenKills(t *testing.T) {
	_, cl := poolWithStubs(t, 1, "alpha")
	setQueue(t, cl, client.Queue{Name: "long", MaxRunSeconds: 3600})
	dir := t.TempDir()
	spec := shJob(`trap "date +%s.%N > `+dir+`/warned" USR1; trap "date +%s.%N > `+dir+`/termed; exit 7" TERM; `+
		`while :; do sleep 3600 & wait; done`, "long")
	spec.TimeLimitS, spec.WarnSignal, spec.WarnLeadS = 3, "USR1", 2
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	in := job.Instances[0]
	if in.State != client.InstanceKilled || in.ExitCode != 7 || !strings.HasPrefix(in.Reason, "timeout: run limit of 3s exceeded") {
		t.Errorf("got %s exit %d reason %q, want killed, exit 7, for the 3 s time limit", in.State, in.ExitCode, in.Reason)
	}
	warned, termed := trapstamp.Read(t, dir, "warned"), trapstamp.Read(t, dir, "termed")
	if gap := termed.Sub(warned); gap < 1500*time.Millisecond || gap > 2500*time.Millisecond {
		t.Errorf("the TERM came %v after the warning, want about the 2 s lead", gap)
	}
	if got := job.Spec; got.TimeLimitS != 3 || got.WarnSignal != "USR1" || got.WarnLeadS != 2 {
		t.Errorf("the job's spec reads time %d signal %s@%d, want 3 USR1@2", got.TimeLimitS, got.WarnSignal, got.WarnLeadS)
	}
}

// TestJobLimitsRefusedAtSubmit: a time limit over the queue's, and a
// warning with no time limit to come before, are refused with the reason.
func TestJobLimitsRefusedAtSubmit(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	setQueue(t, cl, client.Queue{Name: "short", MaxRunSeconds: 3600})
	for _, tc := range []struct {
		name, queue string
		timeS       int64
		sig         string
		leadS       int64
		want        string
	}{
		{"time over the queue's", "short", 7200, "", 0, "job asks a time limit of 2h but queue short allows 1h (nq_maxrun=60)"},
		{"warning without a limit", "", 0, "USR1", 60, "signal= warns 1m before the time limit, but the job has none"},
		{"unknown signal", "", 600, "BOGUS", 60, `signal "BOGUS": not a signal a job can be warned with`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := shJob("true", tc.queue)
			spec.TimeLimitS, spec.WarnSignal, spec.WarnLeadS = tc.timeS, tc.sig, tc.leadS
			_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestJobMemoryIsItsLimit: memory=20 is what an instance needs and the
// most it may use, in a queue without nq_maxmem.
func TestJobMemoryIsItsLimit(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	spec := shJob(`x=$(head -c 60000000 /dev/zero | tr "\0" a); sleep 60`, "")
	spec.MemoryMB = 20
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if in := job.Instances[0]; in.State != client.InstanceKilled || !strings.HasPrefix(in.Reason, "memory: memory limit of 20 MB exceeded") {
		t.Errorf("got %s reason %q, want killed for the job's 20 MB", in.State, in.Reason)
	}
}

// TestQueueKillGrace loads a queue with kill_grace=1: a job that ignores
// the TERM of its time limit is KILLed a second later, not after the
// default 10 s.
func TestQueueKillGrace(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "grace.db",
		Text: "machine alpha = {}\nadd_q quick = {nq_maxrun=60, kill_grace=1}\nallow_root_jobs\n"}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	spec := shJob(`trap "" TERM; sleep 3600`, "quick")
	spec.TimeLimitS = 1
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), resp.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	in := job.Instances[0]
	if in.State != client.InstanceKilled || in.Signal != "KILL" || !strings.HasPrefix(in.Reason, "timeout:") {
		t.Fatalf("got %s signal %s reason %q, want killed by KILL for the time limit", in.State, in.Signal, in.Reason)
	}
	// The TERM at 1 s, the KILL a second later: well before the default
	// grace of 10 s would have sent it.
	if ran := in.EndedAt.Sub(in.StartedAt); ran > 7*time.Second {
		t.Errorf("the instance ran %v, want it KILLed about 2 s after its start (kill_grace=1)", ran)
	}
}
