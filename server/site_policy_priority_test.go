package server_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/policy"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestSitePolicyAdmitPriority: on three TLS servers an admit that gives
// bob's jobs {"priority": 5} commits them with job priority 5 on every
// server; one that gives carol's 5000, out of range, is a policy error
// (an event naming the range) and her job is accepted as it came; a
// user who names a priority himself is refused.
func TestSitePolicyAdmitPriority(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	waitReady(t, c, leader)
	root := c.ClientAs("root", leader)
	src := `def admit(job, user):
    if user["name"] == "bob":
        return {"priority": 5}
    if user["name"] == "carol":
        return {"priority": 5000}
`
	if _, err := root.LoadPolicy(ctx(t), client.PolicyRequest{Source: src}); err != nil {
		t.Fatalf("load policy: %v", err)
	}
	spec := client.JobSpec{Binaries: map[string]string{"*": "/bin/true"}, Min: 1}
	res, err := c.ClientAs("bob", leader).Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("bob's submit: %v", err)
	}
	for i := range c.Servers { // the priority is in the committed entry, on every server
		j, err := c.Client(i).Job(ctx(t), strconv.FormatUint(res.ID, 10))
		if err == nil && j.Spec.Priority != 5 {
			t.Errorf("server %d: bob's job has priority %d, want 5", i, j.Spec.Priority)
		}
	}
	res, err = c.ClientAs("carol", leader).Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("carol's submit under an admit out of range: %v, want it accepted", err)
	}
	if j, err := root.Job(ctx(t), strconv.FormatUint(res.ID, 10)); err != nil || j.Spec.Priority != 0 {
		t.Errorf("carol's job: priority %d, %v; want 0", j.Spec.Priority, err)
	}
	evs, err := root.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	found := false
	for _, e := range evs {
		found = found || e.Kind == fsm.EventPolicyError && strings.Contains(e.Detail, "a priority that is not an int from -1000 to 1000")
	}
	if !found {
		t.Errorf("no policy-error event naming the priority's range in %+v", evs)
	}
	own := spec
	own.Priority = 1
	if _, err := c.ClientAs("dave", leader).Submit(ctx(t), client.SubmitRequest{Spec: own}); err == nil || !strings.Contains(err.Error(), "only the site policy's admit sets a job's priority") {
		t.Errorf("submit naming its own priority: %v, want a refusal", err)
	}
}

// TestPolicyPriorityBoundsMatchLog: admit's bounds on a priority are the
// log's, so what admit accepts Apply accepts.
func TestPolicyPriorityBoundsMatchLog(t *testing.T) {
	if policy.MinPriority != fsm.MinJobPriority || policy.MaxPriority != fsm.MaxJobPriority {
		t.Errorf("policy bounds %d..%d, log bounds %d..%d", policy.MinPriority, policy.MaxPriority, fsm.MinJobPriority, fsm.MaxJobPriority)
	}
}
