package server_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestSitePolicyAdmit: on three TLS servers the admin loads a script
// whose admit moves bob's jobs to queue slow with a 30 s limit and
// refuses over 100 instances; the committed job holds the change; a user
// who is no admin can neither load nor show it; a script whose admit
// fails accepts the job as it came.
func TestSitePolicyAdmit(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	waitReady(t, c, leader)
	root, bob := c.ClientAs("root", leader), c.ClientAs("bob", leader)
	if _, err := root.LoadDatabase(ctx(t), client.DatabaseText{Text: "add_q slow = {nq_maxrun=60}\n"}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	src := `def admit(job, user):
    if job["instances"] > 100:
        return "too big"
    if user["name"] == "bob":
        return {"queue": "slow", "time_limit": 30}
`
	if _, err := bob.LoadPolicy(ctx(t), client.PolicyRequest{Source: src}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("bob loaded a policy: %v", err)
	}
	loaded, err := root.LoadPolicy(ctx(t), client.PolicyRequest{Source: src})
	if err != nil {
		t.Fatalf("load policy: %v", err)
	}
	if p, err := root.Policy(ctx(t)); err != nil || p.Source != src || p.By != "root" || p.LoadIndex != loaded.Index || p.LoadedAt.IsZero() {
		t.Errorf("policy = %+v, %v; want the source loaded by root at index %d", p, err, loaded.Index)
	}
	if _, err := bob.Policy(ctx(t)); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("bob read the policy: %v", err)
	}
	spec := func(n int) client.JobSpec {
		return client.JobSpec{Binaries: map[string]string{"*": "/bin/true"}, Min: n}
	}
	if _, err := bob.Submit(ctx(t), client.SubmitRequest{Spec: spec(101)}); err == nil || !strings.Contains(err.Error(), "refused by the site policy: too big") {
		t.Errorf("submit of 101 instances: %v, want the site policy's refusal", err)
	}
	res, err := bob.Submit(ctx(t), client.SubmitRequest{Spec: spec(1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	for i := range c.Servers { // the change is in the committed entry, on every server
		j, err := c.Client(i).Job(ctx(t), strconv.FormatUint(res.ID, 10))
		if err == nil && (j.Spec.Queue != "slow" || j.Spec.TimeLimitS != 30) {
			t.Errorf("server %d: job in queue %q with limit %d, want slow and 30", i, j.Spec.Queue, j.Spec.TimeLimitS)
		}
	}
	if _, err := root.LoadPolicy(ctx(t), client.PolicyRequest{Source: "def admit(job, user):\n    return job['nope']\n"}); err != nil {
		t.Fatalf("load a failing policy: %v", err)
	}
	res, err = bob.Submit(ctx(t), client.SubmitRequest{Spec: spec(1)})
	if err != nil {
		t.Fatalf("submit under a failing admit: %v, want it accepted", err)
	}
	if j, err := root.Job(ctx(t), strconv.FormatUint(res.ID, 10)); err != nil || j.Spec.Queue != "" {
		t.Errorf("job under a failing admit: queue %q, %v; want the default", j.Spec.Queue, err)
	}
	if cleared, err := root.LoadPolicy(ctx(t), client.PolicyRequest{Clear: true}); err != nil || cleared.Source != "" {
		t.Errorf("clear: %+v, %v", cleared, err)
	}
}
