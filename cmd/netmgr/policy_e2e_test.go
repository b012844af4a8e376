package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// siteScript is the policy: short jobs first, nothing over 100
// instances.
const siteScript = `def admit(job, user):
    if job["instances"] > 100:
        return "at most 100 instances per job (asked %d)" % job["instances"]
    return None

def priority(job, user, usage, now):
    if job["time_limit"] > 0:
        return -job["time_limit"]
    return -1000000000
`

// TestSitePolicyEndToEnd runs the site policy on a 3-server TLS cluster
// of real processes with real users: a script with a syntax error is
// refused naming its line and column and changes nothing; a user who is
// no admin may not load one; the admin loads siteScript and shows it;
// admit refuses 101 instances with the script's message; on a full
// one-slot pool bob's short job starts before alice's earlier unlimited
// one; a script whose priority fails leaves the built-in order (submit
// order) and shows as a policy-error event and in /metrics.
func TestSitePolicyEndToEnd(t *testing.T) {
	dir, c, root, alice, bob := twoUserCluster(t, "nmpa", "nmpb")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := root.LoadDatabase(ctx, client.DatabaseText{Filename: "site.db", Text: fmt.Sprintf("machine %s = {nprocs=1}\n", c.Stubs[0].Name)}); err != nil {
		t.Fatalf("load the database: %v", err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A syntax error: the CLI names FILE:LINE:COL and sends nothing; the
	// server, asked directly, refuses it too, naming the place.
	bad := write("bad.star", "def admit(job, user):\n    return (\n")
	code, text := runNetmgr(t, c.Env(), "admin", "policy", "load", bad)
	if code == 0 || !strings.Contains(text, "bad.star:3:1:") || !strings.Contains(text, "nothing loaded") {
		t.Errorf("admin policy load of a syntax error: exit %d, want non-zero naming bad.star:3:1\n%s", code, text)
	}
	if _, err := root.LoadPolicy(ctx, client.PolicyRequest{Source: "def admit(job, user):\n    return (\n"}); err == nil || !strings.Contains(err.Error(), "line 3 column 1") {
		t.Errorf("the server loaded a syntax error, or did not name its place: %v", err)
	}
	if p, err := root.Policy(ctx); err != nil || p.Source != "" {
		t.Fatalf("after refused loads the policy is %+v, %v; want none", p, err)
	}
	good := write("site.star", siteScript)
	openToEveryone(t, dir)
	if code, text := runAs(t, c, alice, "admin", "policy", "load", good); code == 0 || !strings.Contains(text, "permission denied") {
		t.Errorf("alice, no admin, loaded a policy: exit %d\n%s", code, text)
	}
	if code, text := runNetmgr(t, c.Env(), "admin", "policy", "load", good); code != 0 || !strings.Contains(text, "loaded site policy") {
		t.Fatalf("admin policy load: exit %d\n%s", code, text)
	}
	if code, text := runNetmgr(t, c.Env(), "admin", "policy", "show"); code != 0 || !strings.Contains(text, "# loaded by root at ") || !strings.Contains(text, "return -job[\"time_limit\"]") {
		t.Errorf("admin policy show: exit %d\n%s", code, text)
	}

	// admit: 101 instances refused with the script's message.
	code, text = runAs(t, c, alice, "exec", "-n", "101", "/bin/true")
	if code == 0 || !strings.Contains(text, "refused by the site policy: at most 100 instances per job (asked 101)") {
		t.Errorf("exec -n 101: exit %d, want the site policy's refusal\n%s", code, text)
	}

	// priority: the slot is held; alice submits an unlimited job, then
	// bob a short one; when the slot frees, bob's starts first.
	submit := func(u osUser, args ...string) string {
		t.Helper()
		code, text := runAs(t, c, u, append([]string{"exec"}, args...)...)
		m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(text)
		if code != 0 || m == nil {
			t.Fatalf("netmgr exec %v as %s: exit %d\n%s", args, u.name, code, text)
		}
		return m[1]
	}
	job := func(id string) client.Instance {
		j, err := root.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Instances[0]
	}
	// race holds the slot with a job of alice's (killed once the others
	// wait, or left to end, to charge her), submits long (no time limit)
	// then short (a time limit) behind it, and waits for both to end.
	race := func(holdArgs []string, kill bool, longBy, shortBy osUser) (long, short string) {
		t.Helper()
		hold := submit(alice, holdArgs...)
		testwait.For(t, 60*time.Second, "the holding job to run", func() bool { return !job(hold).StartedAt.IsZero() })
		long = submit(longBy, "/bin/sleep", "1")
		short = submit(shortBy, "--time", "60s", "/bin/sleep", "1")
		if kill {
			if _, err := root.Kill(ctx, hold, client.KillRequest{Signal: "KILL"}); err != nil {
				t.Fatal(err)
			}
		}
		testwait.For(t, 60*time.Second, "both jobs to end", func() bool { return !job(long).EndedAt.IsZero() && !job(short).EndedAt.IsZero() })
		return long, short
	}
	before := func(what, a, b string) {
		t.Helper()
		if pa, pb := job(a).PlacedAt, job(b).PlacedAt; !pa.Before(pb) {
			t.Errorf("%s: job %s placed at %s, not before job %s at %s", what, a, pa.Format(time.RFC3339Nano), b, pb.Format(time.RFC3339Nano))
		}
	}
	long, short := race([]string{"/bin/sleep", "120"}, true, alice, bob)
	before("the script's priority, short jobs first", short, long)

	// A script that fails: the built-in order applies (fair share: bob,
	// who has used less, before alice) where the script would have put
	// alice's short job first; the failure is an event and a metric.
	broken := write("broken.star", "def priority(job, user, usage, now):\n    return job[\"no_such_key\"]\n")
	if code, text := runNetmgr(t, c.Env(), "admin", "policy", "load", broken); code != 0 {
		t.Fatalf("admin policy load broken.star: exit %d\n%s", code, text)
	}
	long, short = race([]string{"/bin/sleep", "3"}, false, bob, alice)
	before("the built-in order while the script fails", long, short)
	code, text = runNetmgr(t, c.Env(), "events")
	if code != 0 || !strings.Contains(text, "policy-error") || !strings.Contains(text, "site policy priority, line 2") {
		t.Errorf("netmgr events: exit %d, want a policy-error naming line 2\n%s", code, text)
	}
	var errs float64
	for _, p := range c.Servers {
		errs += metric(t, c, p, "netmgr_server_policy_errors_total", `function="priority"`)
	}
	if errs < 1 {
		t.Errorf("netmgr_server_policy_errors_total{function=\"priority\"} = %v over the servers, want at least 1", errs)
	}
	if code, text := runNetmgr(t, c.Env(), "admin", "policy", "clear"); code != 0 || !strings.Contains(text, "cleared the site policy") {
		t.Errorf("admin policy clear: exit %d\n%s", code, text)
	}
}
