package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestE2EHistoryAndEventsSurviveRestart runs jobs on a group of server
// processes, reads them back with netmgr history (table, filter, JSON),
// SIGKILLs every server and starts them again: the history and the
// events from before are still there, and events --since selects across
// the restart.
func TestE2EHistoryAndEventsSurviveRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 4 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netmgr")
	c, cl := procCluster(t, dir, 3, 1)
	r := &e2eRunner{links: links, env: c.Env()}

	r.run(t, "netexec", "--wait", "done", "/bin/true").wantCode(t, 0)
	r.run(t, "netexec", "--wait", "done", "/bin/false").wantCode(t, 1)

	table := func() []string {
		t.Helper()
		res := r.run(t, "netmgr", "history")
		res.wantCode(t, 0)
		return strings.Split(strings.TrimSpace(res.stdout), "\n")
	}
	rows := table()
	if len(rows) != 3 || !strings.HasPrefix(strings.Join(strings.Fields(rows[0]), " "), "JOB NAME INST ATTEMPT OWNER") ||
		!strings.Contains(rows[1], " exited ") || !strings.Contains(rows[2], " failed ") {
		t.Fatalf("netmgr history printed\n%s\nwant the header, an exited and a failed attempt", strings.Join(rows, "\n"))
	}
	res := r.run(t, "netmgr", "history", "--state", "failed", "--json")
	res.wantCode(t, 0)
	var failed []client.HistoryAttempt
	if err := json.Unmarshal([]byte(res.stdout), &failed); err != nil {
		t.Fatalf("decode history --json %q: %v", res.stdout, err)
	}
	if len(failed) != 1 || failed[0].ExitCode != 1 || failed[0].Machine == "" || failed[0].StartedAt.IsZero() {
		t.Fatalf("history --state failed --json = %+v, want one attempt that exited 1, with its machine and times", failed)
	}
	// By the failed job's name, in the NAME column, the option after it.
	res = r.run(t, "netmgr", "history", failed[0].Name, "--state", "failed")
	res.wantCode(t, 0)
	if named := strings.Split(strings.TrimSpace(res.stdout), "\n"); len(named) != 2 || failed[0].Name == "" ||
		strings.Fields(named[1])[1] != failed[0].Name || !strings.Contains(named[1], " failed ") {
		t.Fatalf("netmgr history %s printed\n%s\nwant the header and its failed attempt, named", failed[0].Name, res.stdout)
	}

	events := func(args ...string) string {
		t.Helper()
		res := r.run(t, "netmgr", append([]string{"events"}, args...)...)
		res.wantCode(t, 0)
		return res.stdout
	}
	before := events()
	if !strings.Contains(before, "instance-failed") {
		t.Fatalf("events lack the failure:\n%s", before)
	}

	for i := range c.Servers {
		if err := c.KillServer(i, syscall.SIGKILL); err != nil {
			t.Fatalf("kill server %d: %v", i, err)
		}
	}
	for i := range c.Servers {
		if err := c.RestartServer(i); err != nil {
			t.Fatalf("restart server %d: %v", i, err)
		}
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the history back after the restart", func() bool {
		hs, err := cl.History(t.Context(), client.HistoryQuery{})
		return err == nil && len(hs) == 2
	})
	if after := table(); strings.Join(after, "\n") != strings.Join(rows, "\n") {
		t.Errorf("history after restarting every server:\n%s\nwant as before:\n%s", strings.Join(after, "\n"), strings.Join(rows, "\n"))
	}
	if after := events(); !strings.HasPrefix(after, before) {
		t.Errorf("events after restarting every server do not start with the ones before:\n%s\nbefore:\n%s", after, before)
	}
	// --since the second job's submission: its events, not the first's.
	var second time.Time
	dec := json.NewDecoder(strings.NewReader(events("--json")))
	for dec.More() {
		var e client.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("decode events --json: %v", err)
		}
		if e.Kind == "job-submitted" && e.Job == failed[0].Job {
			second = e.At
		}
	}
	from := second.UTC().Format(time.RFC3339Nano)
	since := events("--since", from)
	if !strings.Contains(since, "instance-failed") || strings.Contains(since, "instance-ended") {
		t.Errorf("events --since %s:\n%s\nwant the second job's events and not the first's", from, since)
	}
}

// TestE2EStatusOfRemovedJobFromHistory: once --job-retention has removed
// a finished job from the database, netstatus ID shows its attempts from
// the history, and netmgr history --job ID selects them alone.
func TestE2EStatusOfRemovedJobFromHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netstatus", "netmgr")
	c, cl := procClusterArgs(t, dir, 1, 1, []string{"--job-retention", "1s"})
	r := &e2eRunner{links: links, env: c.Env()}

	r.run(t, "netexec", "--wait", "done", "/bin/true").wantCode(t, 0)
	r.run(t, "netexec", "--wait", "done", "/bin/false").wantCode(t, 1)
	hs, err := cl.History(t.Context(), client.HistoryQuery{State: "failed"})
	if err != nil || len(hs) != 1 {
		t.Fatalf("history of the failed job = %+v, %v; want one attempt", hs, err)
	}
	id := strconv.FormatUint(hs[0].Job, 10)
	testwait.For(t, 30*time.Second, "job "+id+" removed by the retention", func() bool {
		_, err := cl.Job(t.Context(), id)
		return errors.Is(err, client.ErrNotFound)
	})

	res := r.run(t, "netstatus", id)
	res.wantCode(t, 0)
	rows := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(rows) != 3 || !strings.Contains(rows[0], "job "+id+" is no longer in the database") ||
		!strings.HasPrefix(strings.Join(strings.Fields(rows[1]), " "), "JOB NAME INST ATTEMPT") || !strings.HasPrefix(rows[2], id+" ") || !strings.Contains(rows[2], " failed ") {
		t.Fatalf("netstatus %s printed\n%s\nwant a line saying it comes from the history, the header, and its failed attempt", id, res.stdout)
	}
	res = r.run(t, "netmgr", "history", "--job", id, "--json")
	res.wantCode(t, 0)
	var only []client.HistoryAttempt
	if err := json.Unmarshal([]byte(res.stdout), &only); err != nil {
		t.Fatalf("decode history --job %s --json %q: %v", id, res.stdout, err)
	}
	if len(only) != 1 || only[0].Job != hs[0].Job || only[0].ExitCode != 1 {
		t.Fatalf("history --job %s = %+v, want its one failed attempt", id, only)
	}
	// --json keeps the detail view's shape: not found, with the pointer.
	res = r.run(t, "netstatus", "--json", id)
	if res.code == 0 || !strings.Contains(res.stderr, "netmgr history --job "+id) {
		t.Fatalf("netstatus %s --json: exit %d, stderr %q; want a failure that points to netmgr history", id, res.code, res.stderr)
	}
	// An id that never existed is still an error.
	res = r.run(t, "netstatus", "999")
	if res.code == 0 || !strings.Contains(res.stderr, "no such job") {
		t.Fatalf("netstatus 999: exit %d, stderr %q; want no such job", res.code, res.stderr)
	}
}
