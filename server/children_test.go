package server_test

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// A batch of CHILD events is answered event by event: an event of an
// unknown kind is refused on its own, one for a job the database does not
// hold is stale, and a real job's events, sent by its stub in batches,
// bring it to its end.
func TestChildEventBatch(t *testing.T) {
	_, cl := poolWithStubs(t, 3, "alpha")
	results, err := cl.ReportChildren(ctx(t), []client.ChildEvent{
		{Kind: "CHILD_BOGUS", JobID: 1, Attempt: 1, Machine: "alpha", At: time.Now()},
		{Kind: client.ChildTerm, JobID: 9999, Attempt: 1, Machine: "alpha", At: time.Now()},
	})
	if err != nil {
		t.Fatalf("ReportChildren: %v", err)
	}
	if len(results) != 2 || results[0].Error == "" || results[1].Error != "" || !results[1].Stale {
		t.Fatalf("results = %+v, want an error for the bogus kind, then a stale answer", results)
	}

	// Once the leader has read every server's command level from gossip,
	// a batch is one ChildEvents entry: all its events share one index.
	servertest.WaitFor(t, 10*time.Second, "a batch committed as one entry", func() bool {
		results, err := cl.ReportChildren(ctx(t), []client.ChildEvent{
			{Kind: client.ChildRegister, JobID: 9999, Attempt: 1, Machine: "alpha", At: time.Now()},
			{Kind: client.ChildTerm, JobID: 9999, Attempt: 1, Machine: "alpha", At: time.Now()},
		})
		if err != nil {
			t.Fatalf("ReportChildren: %v", err)
		}
		return len(results) == 2 && results[0].Stale && results[1].Stale && results[0].Index == results[1].Index
	})

	sub, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", "exit 5"}, Min: 3,
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := cl.WaitJob(ctx(t), sub.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	for _, in := range job.Instances {
		if in.State != client.InstanceFailed || in.ExitCode != 5 {
			t.Errorf("instance %d: %s exit %d, want failed 5", in.Index, in.State, in.ExitCode)
		}
	}
}
