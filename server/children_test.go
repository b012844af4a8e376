package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
)

// A batch of CHILD events is answered event by event: an event of an
// unknown kind is refused on its own, one for a job the database does not
// hold is stale, and a real job's events, sent by its stub in batches,
// bring it to its end.
func TestChildEventBatch(t *testing.T) {
	t.Parallel()
	c, user := poolWithStubs(t, 3, "alpha")
	cl := c.ClientFor(pki.Identity{Role: pki.RoleStub, Name: "alpha"})
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
	testwait.For(t, 10*time.Second, "a batch committed as one entry", func() bool {
		results, err := cl.ReportChildren(ctx(t), []client.ChildEvent{
			{Kind: client.ChildRegister, JobID: 9999, Attempt: 1, Machine: "alpha", At: time.Now()},
			{Kind: client.ChildTerm, JobID: 9999, Attempt: 1, Machine: "alpha", At: time.Now()},
		})
		if err != nil {
			t.Fatalf("ReportChildren: %v", err)
		}
		return len(results) == 2 && results[0].Stale && results[1].Stale && results[0].Index == results[1].Index
	})

	sub, err := user.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", "exit 5"}, Min: 3,
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := user.WaitJob(ctx(t), sub.Name, client.WaitDone)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	for _, in := range job.Instances {
		if in.State != client.InstanceFailed || in.ExitCode != 5 {
			t.Errorf("instance %d: %s exit %d, want failed 5", in.Index, in.State, in.ExitCode)
		}
	}
}

// A stub reports only its own machine's attempts: a batch that names
// another machine is refused whole, and a user may report nothing.
func TestChildEventsOnlyFromTheirMachine(t *testing.T) {
	t.Parallel()
	c, user := poolWithStubs(t, 1, "alpha", "beta")
	sub, err := user.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"300"}, Machines: []string{"alpha"},
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	job, err := user.WaitJob(ctx(t), sub.Name, client.WaitStarted)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	forged := []client.ChildEvent{{Kind: client.ChildTerm, JobID: job.ID, Instance: 0, Attempt: job.Instances[0].Attempt, Machine: "alpha", At: time.Now()}}
	beta := c.ClientFor(pki.Identity{Role: pki.RoleStub, Name: "beta"})
	_, err = beta.ReportChildren(ctx(t), forged)
	wantAPIError(t, err, http.StatusForbidden, "the certificate is machine beta's")
	_, err = user.ReportChildren(ctx(t), forged)
	wantAPIError(t, err, http.StatusForbidden, "is for stubs")
	forged[0].Machine = "beta" // beta's own name, alpha's attempt: fenced
	if res, err := beta.ReportChildren(ctx(t), forged); err != nil || len(res) != 1 || (res[0].Error == "" && !res[0].Stale) {
		t.Fatalf("beta reporting alpha's attempt as its own: %+v, %v; want it refused or stale", res, err)
	}
	if j, err := user.Job(ctx(t), sub.Name); err != nil || j.Instances[0].State != client.InstanceRunning {
		t.Fatalf("after the forged CHILD_TERMs the job is %+v (%v), want it still running", j, err)
	}
}
