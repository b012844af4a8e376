package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func shSpec(script string, n int) client.JobSpec {
	return client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", script},
		Min:      n,
	}
}

// get GETs path from the server at addr of c, or of an insecure group of
// the test's own making when c is nil.
func get(c *servertest.Cluster, addr, path string) (*http.Response, error) {
	if c == nil {
		return http.Get("http://" + addr + path)
	}
	return c.HTTPClient().Get(c.URL(addr, path))
}

// staleJobs reads one server's own copy of the jobs, without redirect.
func staleJobs(t *testing.T, c *servertest.Cluster, addr string) []client.Job {
	t.Helper()
	resp, err := get(c, addr, "/v1/jobs?stale")
	if err != nil {
		t.Fatalf("GET jobs from %s: %v", addr, err)
	}
	defer resp.Body.Close()
	var jobs []client.Job
	if err := json.NewDecoder(resp.Body).Decode(&jobs); err != nil {
		t.Fatalf("decode jobs from %s: %v", addr, err)
	}
	return jobs
}

func TestGroupFormsByGossipAndReplicates(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()

	// A follower learns the leader from its first append, moments after
	// the election.
	var servers []client.Server
	testwait.For(t, 10*time.Second, "every server to know the leader", func() bool {
		var err error
		if servers, err = c.Client().Servers(ctx(t)); err != nil {
			t.Fatalf("servers: %v", err)
		}
		for _, s := range servers {
			if s.Leader == "" {
				return false
			}
		}
		return true
	})
	if len(servers) != 3 {
		t.Fatalf("got %d servers, want 3: %+v", len(servers), servers)
	}
	// On a loaded machine leadership may move after WaitLeader: every
	// server must name the same leader, the one server that says it leads.
	leaders, led := 0, ""
	for _, s := range servers {
		if s.Role == "leader" {
			leaders++
			led = s.Name
		}
	}
	if leaders != 1 {
		t.Fatalf("got %d leaders, want 1: %+v", leaders, servers)
	}
	for _, s := range servers {
		if s.Leader != led {
			t.Errorf("server %s sees leader %q, want %q", s.Name, s.Leader, led)
		}
	}
	if led != c.Servers[leader].Name() {
		t.Logf("leadership moved from %s to %s during the test", c.Servers[leader].Name(), led)
	}

	resp, err := c.Client(leader).Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 2)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	for _, addr := range c.Addrs() {
		testwait.For(t, 5*time.Second, "job replicated to "+addr, func() bool {
			jobs := staleJobs(t, c, addr)
			return len(jobs) == 1 && jobs[0].ID == resp.ID && len(jobs[0].Instances) == 2
		})
	}
}

func TestFollowerForwardsWrites(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	follower := (leader + 1) % 3

	cl := c.Client(follower)
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)})
	if err != nil {
		t.Fatalf("submit through follower: %v", err)
	}
	if want := servertest.CurrentUser(t); resp.ID != 1 || resp.Name != "job1" || resp.Owner != want {
		t.Errorf("got %+v, want id 1 name job1 owner %s", resp, want)
	}
	// A consistent read on the follower is redirected to the leader.
	job, err := cl.Job(ctx(t), "job1")
	if err != nil {
		t.Fatalf("read through follower: %v", err)
	}
	if job.ID != resp.ID {
		t.Errorf("got job %d, want %d", job.ID, resp.ID)
	}
}

func TestNewLeaderAfterLeaderCutOff(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	old := c.WaitLeader()
	first, err := c.Client(old).Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}

	c.Isolate(old)
	next := c.WaitLeader(old)
	if next == old {
		t.Fatalf("leader did not change")
	}
	rest := []int{}
	for i := range 3 {
		if i != old {
			rest = append(rest, i)
		}
	}
	second, err := c.Client(rest...).Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)})
	if err != nil {
		t.Fatalf("submit to the majority: %v", err)
	}
	if second.ID != first.ID+1 {
		t.Errorf("got id %d after failover, want %d", second.ID, first.ID+1)
	}

	c.Heal()
	testwait.For(t, 10*time.Second, "old leader catches up", func() bool {
		return len(staleJobs(t, c, c.Servers[old].HTTPAddr())) == 2
	})
	c.WaitLeader()
}

func TestIdempotentSubmit(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	req := client.SubmitRequest{Spec: shSpec("true", 1), IdempotencyKey: "same-key"}
	a, err := cl.Submit(ctx(t), req)
	if err != nil {
		t.Fatalf("first submit: %v", err)
	}
	b, err := cl.Submit(ctx(t), req)
	if err != nil {
		t.Fatalf("retried submit: %v", err)
	}
	if a.ID != b.ID {
		t.Errorf("retried submit made job %d, want the first job %d", b.ID, a.ID)
	}
	jobs, err := cl.Jobs(ctx(t))
	if err != nil {
		t.Fatalf("jobs: %v", err)
	}
	if len(jobs) != 1 {
		t.Errorf("got %d jobs, want 1", len(jobs))
	}
}

func TestBadRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	tests := []struct {
		name string
		spec client.JobSpec
		want string
	}{
		{"no binaries", client.JobSpec{}, "binaries: at least one binary is required"},
		{"empty path", client.JobSpec{Binaries: map[string]string{"x86_64": ""}}, "key and path must both be set"},
		{"bad env", client.JobSpec{Binaries: map[string]string{"*": "/bin/true"}, Env: []string{"NOEQUALS"}}, `env: "NOEQUALS" is not NAME=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: tt.spec})
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
				t.Fatalf("got %v, want a 400 APIError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := cl.Job(ctx(t), "nosuchjob"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("got %v for an unknown job, want ErrNotFound", err)
	}
	jobs, err := cl.Jobs(ctx(t))
	if err != nil {
		t.Fatalf("jobs: %v", err)
	}
	if len(jobs) != 0 {
		t.Errorf("got %d jobs after bad submits, want 0", len(jobs))
	}
}
