package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// cronE2EWindow is how long TestE2ECronAcrossLeaderKills kills leaders.
const cronE2EWindow = 60 * time.Second

// TestE2ECronAcrossLeaderKills submits, through netexec, a cron job firing
// every 2 s on 3 server and 2 stub processes, whose runs append
// NETMGR_SCHEDULED_TIME to a ledger. For a minute it SIGKILLs the leader
// just before a firing time, waits for a new leader and restarts the
// killed server, again and again. Then it ends the schedule with netkill
// and checks the ledger against the cron job's committed record: every
// scheduled time from the first firing through the last decided appears
// exactly once, either as one line of the ledger (a run) or as a skip the
// state machine recorded (a time missed while no server led, which
// catchup=last records instead of running), never both and never twice;
// no line is a time off the schedule; and every run the cron job lists
// wrote its own time.
func TestE2ECronAcrossLeaderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the leader for a minute; run without -short")
	}
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 2)
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := netmgrBinary(t)
	for _, name := range []string{"netexec", "netstatus", "netkill"} {
		if err := os.Symlink(bin, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	ledger := filepath.Join(out, "ledger")
	r := &e2eRunner{links: links, env: c.Env()}
	r.run(t, "netexec", "--name", "tick", "--cron", "@every 2s", "--overlap", "allow",
		"/bin/sh", "-c", `echo "$NETMGR_SCHEDULED_TIME" >> `+ledger).wantCode(t, 0)

	// job reads the cron job, retrying while the group elects a leader.
	job := func() client.Job {
		t.Helper()
		var j client.Job
		servertest.WaitFor(t, 30*time.Second, "the cron job answered", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			j, err = cl.Job(ctx, "tick")
			return err == nil && j.Cron != nil
		})
		return j
	}
	servertest.WaitFor(t, 30*time.Second, "the first run", func() bool { return len(job().Cron.Runs) > 0 })
	res := r.run(t, "netstatus", "-j")
	res.wantCode(t, 0)
	if !rowHas(res.stdout, "tick", `cron "@every 2s", next `) || !strings.Contains(res.stdout, "scheduled") {
		t.Errorf("netstatus -j: want the cron job's schedule and next firing\n%s", res.stdout)
	}

	kills := 0
	for end := time.Now().Add(cronE2EWindow); time.Now().Before(end); {
		// Kill the leader 150 ms before the next firing time, so that
		// the firing falls to the next leader, and some firings commit
		// just before a kill.
		next := job().Cron.Next
		if wait := time.Until(next) - 150*time.Millisecond - time.Duration(kills%3)*100*time.Millisecond; wait > 0 {
			time.Sleep(wait) // aiming at a firing time, not waiting for a condition
		}
		li, name := c.Leader()
		if li < 0 {
			continue
		}
		killedAt := time.Now()
		if err := c.KillServer(li, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		kills++
		if err := c.WaitLeader(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.RestartServer(li); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitCaughtUp(li, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill %d: leader %s killed %v before the firing at %s", kills, name, next.Sub(killedAt).Round(time.Millisecond), next.Format("15:04:05"))
	}
	// Two more firings under a stable leader, then end the schedule.
	before := len(job().Cron.Runs)
	servertest.WaitFor(t, 30*time.Second, "two firings after the kills", func() bool { return len(job().Cron.Runs) >= before+2 })
	r.run(t, "netkill", "tick").wantCode(t, 0)
	final := job()
	if !final.Cron.Ended || final.State != client.JobKilled {
		t.Fatalf("after netkill: %s %+v, want the schedule ended", final.State, final.Cron)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runTimes := map[string]bool{}
	for _, id := range final.Cron.Runs {
		run, err := cl.WaitJob(ctx, strconv.FormatUint(id, 10), client.WaitDone)
		if err != nil || run.State != client.JobDone {
			t.Fatalf("run %d: %s %v, want done", id, run.State, err)
		}
		runTimes[run.Scheduled.UTC().Format(time.RFC3339)] = true
	}
	data, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatalf("read ledger: %v", err)
	}
	lines := strings.Fields(string(data))
	ran := map[string]bool{}
	for _, l := range lines {
		if ran[l] {
			t.Errorf("ledger: %s twice: a firing ran twice", l)
		}
		ran[l] = true
	}
	skipped := map[string]string{}
	if final.Cron.Skipped != len(final.Cron.Skips) {
		t.Fatalf("%d firings skipped, %d listed: the test cannot account for them all", final.Cron.Skipped, len(final.Cron.Skips))
	}
	for _, s := range final.Cron.Skips {
		skipped[s.Scheduled.UTC().Format(time.RFC3339)] = s.Reason
		t.Logf("skipped %s: %s", s.Scheduled.UTC().Format(time.RFC3339), s.Reason)
	}
	// The schedule: @every 2s from the submit time, whole seconds.
	var want []string
	for tm := final.SubmittedAt.Truncate(time.Second).Add(2 * time.Second); !tm.After(final.Cron.Through); tm = tm.Add(2 * time.Second) {
		want = append(want, tm.UTC().Format(time.RFC3339))
	}
	for _, tm := range want {
		switch {
		case ran[tm] && skipped[tm] != "":
			t.Errorf("%s both ran and was skipped (%s)", tm, skipped[tm])
		case !ran[tm] && skipped[tm] == "":
			t.Errorf("%s neither ran nor was recorded skipped: a firing was dropped", tm)
		case ran[tm] != runTimes[tm]:
			t.Errorf("%s: in the ledger %v, among the cron job's runs %v", tm, ran[tm], runTimes[tm])
		}
		delete(ran, tm)
		delete(skipped, tm)
	}
	if len(ran) > 0 || len(skipped) > 0 {
		t.Errorf("times off the schedule: ran %v, skipped %v", ran, skipped)
	}
	if len(final.Cron.Runs) != len(lines) {
		t.Errorf("%d runs, %d ledger lines: want one line per run", len(final.Cron.Runs), len(lines))
	}
	t.Logf("%d leader kills; %d scheduled times: %d ran, %d recorded missed", kills, len(want), len(lines), len(final.Cron.Skips))
	if kills < 5 || len(lines) < len(want)/2 {
		t.Errorf("%d kills and %d of %d times ran: the test did not exercise what it should", kills, len(lines), len(want))
	}
	if slices.ContainsFunc(final.Cron.Skips, func(s client.CronSkip) bool { return !strings.HasPrefix(s.Reason, "missed:") }) {
		t.Errorf("skips other than missed times under overlap=allow: %+v", final.Cron.Skips)
	}
}
