package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestE2EDependencyChain runs a chain a -> b -> c through netexec on 3
// server and 2 stub processes: b (--afterok a) and c (--after b) start only
// after their dependency ended, by the times the jobs' own ledger records;
// while a runs, netstatus -j shows b held(dependency) and netstatus --why
// says what it waits for; d (--afterok f, which fails) ends
// cancelled(dependency), which netstatus -j and --why show.
func TestE2EDependencyChain(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 5 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netstatus")
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	c, err := servertest.StartProcCluster(bin, filepath.Join(dir, "cluster"), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(6000))
		}
	})
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitMachines(2, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	r := &e2eRunner{links: links, env: c.Env()}

	// Each job appends "NAME start T" and "NAME end T" to its own ledger
	// file, T in seconds since the epoch with nanoseconds; a waits for a
	// gate file so that the test sees b held.
	gate := filepath.Join(out, "gate")
	step := func(name, body string) string {
		ledger := filepath.Join(out, name+".ledger")
		return fmt.Sprintf(`echo "%s start $(date +%%s.%%N)" >> %s; %s; echo "%s end $(date +%%s.%%N)" >> %s`,
			name, ledger, body, name, ledger)
	}
	r.run(t, "netexec", "--name", "dep-a", "/bin/sh", "-c",
		step("a", fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.02; done`, gate))).wantCode(t, 0)
	r.run(t, "netexec", "--name", "dep-b", "--afterok", "dep-a", "/bin/sh", "-c", step("b", "true")).wantCode(t, 0)
	r.run(t, "netexec", "--name", "dep-c", "--after", "dep-b", "/bin/sh", "-c", step("c", "true")).wantCode(t, 0)
	r.run(t, "netexec", "--name", "dep-f", "/bin/false").wantCode(t, 0)
	r.run(t, "netexec", "--name", "dep-d", "--afterok", "dep-f", "/bin/true").wantCode(t, 0)

	cl, err := c.Client(client.WithUser("e2e"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cl.WaitJob(ctx, "dep-a", client.WaitStarted); err != nil {
		t.Fatalf("wait for dep-a to start: %v", err)
	}
	res := r.run(t, "netstatus", "-j")
	res.wantCode(t, 0)
	if !rowHas(res.stdout, "dep-b", "held(dependency)") || !rowHas(res.stdout, "dep-c", "held(dependency)") {
		t.Errorf("netstatus -j while dep-a runs: want dep-b and dep-c held(dependency)\n%s", res.stdout)
	}
	res = r.run(t, "netstatus", "--why", "dep-b")
	res.wantCode(t, 0)
	if !strings.Contains(res.stdout, "held(dependency): waits for job") || !strings.Contains(res.stdout, "(running) to succeed") {
		t.Errorf("netstatus --why dep-b: want it to name dep-a running\n%s", res.stdout)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.run(t, "netexec", "--name", "dep-wait", "--after", "dep-c", "--wait", "done", "/bin/true").wantCode(t, 0)

	times := map[string]float64{}
	for _, name := range []string{"a", "b", "c"} {
		data, err := os.ReadFile(filepath.Join(out, name+".ledger"))
		if err != nil {
			t.Fatalf("job %s left no ledger: %v", name, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 {
				t.Fatalf("ledger %s: bad line %q", name, line)
			}
			if _, dup := times[f[0]+" "+f[1]]; dup {
				t.Errorf("ledger %s: %q twice: the job ran twice", name, line)
			}
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatalf("ledger %s: %q: %v", name, line, err)
			}
			times[f[0]+" "+f[1]] = v
		}
	}
	for _, p := range [][2]string{{"a end", "b start"}, {"b end", "c start"}} {
		end, start := times[p[0]], times[p[1]]
		if end == 0 || start == 0 || start < end {
			t.Errorf("%s at %.6f, %s at %.6f: want the start after the end", p[0], end, p[1], start)
		} else {
			t.Logf("gap from %s to %s: %.1f ms", p[0], p[1], (start-end)*1000)
		}
	}

	res = r.run(t, "netstatus", "-j")
	res.wantCode(t, 0)
	if !rowHas(res.stdout, "dep-d", "cancelled(dependency)") || !strings.Contains(res.stdout, "dependency: afterok job") {
		t.Errorf("netstatus -j: want dep-d cancelled(dependency) with its reason\n%s", res.stdout)
	}
	res = r.run(t, "netstatus", "--why", "dep-d")
	res.wantCode(t, 0)
	if want := "is cancelled(dependency): dependency: afterok job"; !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, "(dep-f) failed") {
		t.Errorf("netstatus --why dep-d: want %q naming dep-f failed\n%s", want, res.stdout)
	}
}

// rowHas reports whether a line of a table names job and has text.
func rowHas(table, job, text string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, " "+job+".") && strings.Contains(line, text) {
			return true
		}
	}
	return false
}
