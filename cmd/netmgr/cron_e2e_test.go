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
	"github.com/netmgr/netmgr/internal/testwait"
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
	// It waits out outages and firings more than it computes, on a
	// cluster of its own.
	t.Parallel()
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 2)
	links := commandLinks(t, dir, netmgrBinary(t), "netexec", "netstatus", "netkill")
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
		testwait.For(t, 30*time.Second, "the cron job answered", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			j, err = cl.Job(ctx, "tick")
			return err == nil && j.Cron != nil
		})
		return j
	}
	testwait.For(t, 30*time.Second, "the first run", func() bool { return len(job().Cron.Runs) > 0 })
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
	testwait.For(t, 30*time.Second, "two firings after the kills", func() bool { return len(job().Cron.Runs) >= before+2 })
	r.run(t, "netkill", "tick").wantCode(t, 0)
	final := job()
	if !final.Cron.Ended || final.State != client.JobKilled {
		t.Fatalf("after netkill: %s %+v, want the schedule ended", final.State, final.Cron)
	}
	acc := accountCron(t, cl, final, ledger)
	lines, want := acc.ran, acc.times
	t.Logf("%d leader kills; %d scheduled times: %d ran, %d recorded missed", kills, len(want), len(lines), len(acc.skipped))
	if kills < 5 || len(lines) < len(want)/2 {
		t.Errorf("%d kills and %d of %d times ran: the test did not exercise what it should", kills, len(lines), len(want))
	}
	if slices.ContainsFunc(final.Cron.Skips, func(s client.CronSkip) bool { return !strings.HasPrefix(s.Reason, "missed:") }) {
		t.Errorf("skips other than missed times under overlap=allow: %+v", final.Cron.Skips)
	}
}

// cronAccount is a cron job's firings, accounted for: its scheduled times
// from the first through the last decided, and which of them ran (by the
// runs' own ledger) or were skipped (by the committed record), in order.
type cronAccount struct {
	times   []string          // RFC 3339, UTC
	ran     []string          // the ledger's lines
	skipped map[string]string // time -> reason
}

// accountCron waits for every run of cron job final (whose schedule has
// ended) to end, reads the ledger its runs append NETMGR_SCHEDULED_TIME
// to, and checks that each scheduled time of its @every 2s schedule
// through final.Cron.Through is decided exactly once: one ledger line of
// a run the job lists, or one recorded skip, never both, never twice, and
// nothing off the schedule.
func accountCron(t *testing.T, cl *client.Client, final client.Job, ledger string) cronAccount {
	t.Helper()
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
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("read ledger: %v", err)
	}
	acc := cronAccount{ran: strings.Fields(string(data)), skipped: map[string]string{}}
	ran := map[string]bool{}
	for _, l := range acc.ran {
		if ran[l] {
			t.Errorf("ledger: %s twice: a firing ran twice", l)
		}
		ran[l] = true
	}
	if final.Cron.Skipped != len(final.Cron.Skips) {
		t.Fatalf("%d firings skipped, %d listed: the test cannot account for them all", final.Cron.Skipped, len(final.Cron.Skips))
	}
	skipped := map[string]string{}
	for _, s := range final.Cron.Skips {
		tm := s.Scheduled.UTC().Format(time.RFC3339)
		skipped[tm], acc.skipped[tm] = s.Reason, s.Reason
		t.Logf("%s skipped %s: %s", final.Name, tm, s.Reason)
	}
	// The schedule: @every 2s from the submit time, whole seconds.
	for tm := final.SubmittedAt.Truncate(time.Second).Add(2 * time.Second); !tm.After(final.Cron.Through); tm = tm.Add(2 * time.Second) {
		acc.times = append(acc.times, tm.UTC().Format(time.RFC3339))
	}
	for _, tm := range acc.times {
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
	if len(final.Cron.Runs) != len(acc.ran) {
		t.Errorf("%d runs, %d ledger lines: want one line per run", len(final.Cron.Runs), len(acc.ran))
	}
	return acc
}

// TestE2ECronCatchupAfterOutage pauses every server (SIGSTOP) for 7 s
// while two cron jobs of @every 2s run, one catchup=last, one
// catchup=none. When the group resumes, the last job runs once, for the
// most recent time it missed, and records the earlier ones missed; the
// none job records every time it missed by more than its grace and runs
// none of them. Both then fire on time again, and every scheduled time is
// accounted for exactly once.
func TestE2ECronCatchupAfterOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses the server group for 7 s; run without -short")
	}
	dir := t.TempDir()
	c, cl := procCluster(t, dir, 3, 1)
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ledgers := map[string]string{}
	for _, catchup := range []string{client.CatchupLast, client.CatchupNone} {
		name := "catchup-" + catchup
		ledgers[name] = filepath.Join(out, name)
		spec := client.JobSpec{
			Name: name, Binaries: map[string]string{client.AnyKey: "/bin/sh"},
			Args: []string{"-c", `echo "$NETMGR_SCHEDULED_TIME" >> ` + ledgers[name]},
			Cron: "@every 2s", Catchup: catchup, Overlap: client.OverlapAllow,
		}
		if _, err := cl.Submit(ctx, client.SubmitRequest{Spec: spec}); err != nil {
			t.Fatalf("submit %s: %v", name, err)
		}
	}
	job := func(name string) client.Job {
		t.Helper()
		var j client.Job
		testwait.For(t, 30*time.Second, name+" answered", func() bool {
			var err error
			j, err = cl.Job(ctx, name)
			return err == nil && j.Cron != nil
		})
		return j
	}
	testwait.For(t, 30*time.Second, "two runs of each", func() bool {
		return len(job("catchup-last").Cron.Runs) >= 2 && len(job("catchup-none").Cron.Runs) >= 2
	})
	// Pause just after a firing time, so the resume falls mid-period.
	next := job("catchup-last").Cron.Next
	time.Sleep(time.Until(next) + 300*time.Millisecond) // aiming at a firing time
	pauseServers(t, c, syscall.SIGSTOP)
	paused := time.Now()
	time.Sleep(7 * time.Second) // the fault itself: no server leads this long
	pauseServers(t, c, syscall.SIGCONT)
	resumed := time.Now()
	t.Logf("paused %s to %s", paused.Format("15:04:05.000"), resumed.Format("15:04:05.000"))
	for _, name := range []string{"catchup-last", "catchup-none"} {
		testwait.For(t, 30*time.Second, name+" firing on time again", func() bool {
			j := job(name)
			return j.Cron.Through.After(resumed.Add(2 * time.Second))
		})
	}
	for _, name := range []string{"catchup-last", "catchup-none"} {
		if _, err := cl.Kill(ctx, name, client.KillRequest{}); err != nil {
			t.Fatalf("kill %s: %v", name, err)
		}
	}
	last := accountCron(t, cl, job("catchup-last"), ledgers["catchup-last"])
	none := accountCron(t, cl, job("catchup-none"), ledgers["catchup-none"])

	// The times the outage covered: after the pause, at least a second
	// (the grace of @every 2s) before the resume.
	at := func(tm string) time.Time { v, _ := time.Parse(time.RFC3339, tm); return v }
	inGap := func(tm string) bool { return at(tm).After(paused) && at(tm).Before(resumed.Add(-time.Second)) }
	gap := slices.DeleteFunc(slices.Clone(last.times), func(tm string) bool { return !inGap(tm) })
	if len(gap) < 3 {
		t.Fatalf("only %d times in the outage: %v", len(gap), gap)
	}
	// catchup=last: every time in the outage but the most recent one due
	// when a leader fired again is recorded missed; that one ran, late.
	var missed []string
	for _, tm := range last.times {
		// A firing due just before the pause that had not committed yet
		// is missed too, and not the outage's to account for.
		if strings.HasPrefix(last.skipped[tm], "missed:") && at(tm).After(paused) {
			missed = append(missed, tm)
		}
	}
	if len(missed) < 2 || !slices.Equal(missed, gap[:len(missed)]) {
		t.Errorf("catchup=last: missed %v, want the outage's times %v but the last", missed, gap)
	} else if after := at(missed[len(missed)-1]).Add(2 * time.Second).UTC().Format(time.RFC3339); !slices.Contains(last.ran, after) {
		t.Errorf("catchup=last: %s, the most recent time missed, did not run", after)
	}
	// catchup=none: every time in the outage recorded missed, none ran.
	for _, tm := range gap {
		if !strings.HasPrefix(none.skipped[tm], "missed:") || slices.Contains(none.ran, tm) {
			t.Errorf("catchup=none: %s in the outage: skip %q, ran %v; want it missed", tm, none.skipped[tm], slices.Contains(none.ran, tm))
		}
	}
	t.Logf("outage times %v; catchup=last missed %v; catchup=none skipped %d", gap, missed, len(none.skipped))
}
