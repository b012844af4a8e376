package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// staleHistory reads server addr's own history (no redirect to the
// leader), as root on a pool machine (an admin): every attempt.
func staleHistory(t *testing.T, c *servertest.Cluster, addr string) []client.HistoryAttempt {
	t.Helper()
	var out []client.HistoryAttempt
	staleGet(t, c, addr, "/v1/history?stale", &out)
	return out
}

// staleEvents reads server addr's own events.
func staleEvents(t *testing.T, c *servertest.Cluster, addr string) []client.Event {
	t.Helper()
	var out []client.Event
	staleGet(t, c, addr, "/v1/events?stale", &out)
	return out
}

func staleGet(t *testing.T, c *servertest.Cluster, addr, path string, out any) {
	t.Helper()
	resp, err := get(c, addr, path)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", path, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s from %s: %s", path, addr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("decode %s from %s: %v", path, addr, err)
	}
}

// attemptKeys names each attempt job/instance/attempt:state.
func attemptKeys(as []client.HistoryAttempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = fmt.Sprintf("%d/%d/%d:%s", a.Job, a.Instance, a.Attempt, a.State)
	}
	return out
}

// runJob submits spec and waits until it is done.
func runJob(t *testing.T, cl *client.Client, spec client.JobSpec) uint64 {
	t.Helper()
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if _, err := cl.WaitJob(ctx(t), strconv.FormatUint(resp.ID, 10), client.WaitDone); err != nil {
		t.Fatalf("wait job %d: %v", resp.ID, err)
	}
	return resp.ID
}

// TestHistoryCatchesUpAfterSnapshot stops a follower while jobs run and
// end, compacts the others' logs behind a snapshot so that the follower
// can only be brought up to date by InstallSnapshot, restarts it, and
// finds every attempt and event in its own history, fetched from a peer.
func TestHistoryCatchesUpAfterSnapshot(t *testing.T) {
	t.Parallel()
	c := servertest.NewDurableClusterConfig(t, 3, func(_ int, cfg *server.Config) {
		cfg.TuneRaft = func(rc *raft.Config) { rc.TrailingLogs = 2 }
	})
	leader := c.WaitLeader()
	c.AddStub("alpha")
	cl := c.Client()
	testwait.For(t, 20*time.Second, "alpha up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	before := runJob(t, cl, shSpec("exit 0", 1))

	down := (leader + 1) % 3
	c.StopServer(down)
	failing := shSpec("exit 3", 1)
	failing.Restart, failing.MaxRestarts = "on-failure", 2
	retried := runJob(t, cl, failing)
	two := runJob(t, cl, shSpec("exit $NETMGR_INSTANCE", 2))
	for i := range c.Servers {
		if i != down {
			if err := c.Servers[i].Snapshot(); err != nil {
				t.Fatalf("snapshot on s%d: %v", i, err)
			}
		}
	}

	up := (leader + 2) % 3
	wantKeys := []string{
		fmt.Sprintf("%d/0/1:exited", before),
		fmt.Sprintf("%d/0/1:failed", retried), fmt.Sprintf("%d/0/2:failed", retried), fmt.Sprintf("%d/0/3:failed", retried),
		fmt.Sprintf("%d/0/1:exited", two), fmt.Sprintf("%d/1/1:failed", two),
	}
	var want []client.HistoryAttempt
	testwait.For(t, 10*time.Second, fmt.Sprintf("s%d to apply every end", up), func() bool {
		want = staleHistory(t, c, c.Servers[up].HTTPAddr())
		return len(want) >= len(wantKeys)
	})
	got := attemptKeys(want)
	slices.Sort(got)
	slices.Sort(wantKeys)
	if !reflect.DeepEqual(got, wantKeys) {
		t.Fatalf("history on s%d = %v, want %v", up, got, wantKeys)
	}
	for _, a := range want {
		if a.Job == retried && a.Attempt < 3 && a.ReplacedBy != a.Attempt+1 {
			t.Errorf("attempt %d of job %d replaced by %d, want %d", a.Attempt, retried, a.ReplacedBy, a.Attempt+1)
		}
		if a.Owner == "" || a.Machine != "alpha" || a.EndedAt.IsZero() || a.StartedAt.IsZero() {
			t.Errorf("attempt %+v lacks its owner, machine or times", a)
		}
	}

	s := c.RestartServer(down)
	wantEvents := staleEvents(t, c, c.Servers[up].HTTPAddr())
	testwait.For(t, 30*time.Second, "the restarted server's history to match its peer's", func() bool {
		return reflect.DeepEqual(attemptKeys(staleHistory(t, c, s.HTTPAddr())), attemptKeys(want))
	})
	gotAttempts := staleHistory(t, c, s.HTTPAddr())
	if !reflect.DeepEqual(gotAttempts, want) {
		t.Errorf("restarted server's attempts differ from its peer's:\n got %+v\nwant %+v", gotAttempts, want)
	}
	// Its events hold every one its peer held then, from before the stop
	// through the ones it missed.
	gotEvents := staleEvents(t, c, s.HTTPAddr())
	if len(gotEvents) < len(wantEvents) || !reflect.DeepEqual(gotEvents[:len(wantEvents)], wantEvents) {
		t.Errorf("restarted server's events (%d) do not start with its peer's (%d)", len(gotEvents), len(wantEvents))
	}
}

// TestEventsSurviveRestartOfEveryServer stops every server and starts
// them again: the events from before are still listed, by the new leader
// and a follower alike, and --since selects across the restart.
func TestEventsSurviveRestartOfEveryServer(t *testing.T) {
	t.Parallel()
	c := servertest.NewDurableCluster(t, 3)
	c.WaitLeader()
	c.AddStub("alpha")
	cl := c.Client()
	testwait.For(t, 20*time.Second, "alpha up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	id := runJob(t, cl, shSpec("exit 0", 1))
	old, err := cl.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	ended := -1
	for i, e := range old {
		if e.Kind == "instance-ended" && e.Job == id {
			ended = i
		}
	}
	if ended < 0 {
		t.Fatalf("no instance-ended event for job %d in %+v", id, old)
	}

	for i := range c.Servers {
		c.StopServer(i)
	}
	for i := range c.Servers {
		c.RestartServer(i)
	}
	leader := c.WaitLeader()
	cl = c.Client()
	evs, err := cl.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events after restart: %v", err)
	}
	if len(evs) < len(old) || !reflect.DeepEqual(evs[:len(old)], old) {
		t.Fatalf("after restarting every server, events start %v, want the %d from before", evs[:min(len(evs), len(old))], len(old))
	}
	// A follower's own copy answers the same once it has applied as much.
	follower := (leader + 1) % 3
	testwait.For(t, 10*time.Second, "a follower's events to match the leader's", func() bool {
		return reflect.DeepEqual(staleEvents(t, c, c.Servers[follower].HTTPAddr()), staleEvents(t, c, c.Servers[leader].HTTPAddr()))
	})
	since, err := cl.EventsSince(ctx(t), 0, old[ended].At)
	if err != nil {
		t.Fatalf("events since: %v", err)
	}
	if len(since) == 0 || since[0].At.Before(old[ended].At) || !reflect.DeepEqual(since[0], old[ended]) {
		t.Errorf("events since %v start with %+v, want the instance-ended event %+v", old[ended].At, since[:min(1, len(since))], old[ended])
	}
}

// TestHistoryFiltersAndWhoSees runs jobs as two users and reads the
// history through the API: each user sees their own attempts, an admin
// (root on a pool machine) everyone's, and the filters select.
func TestHistoryFiltersAndWhoSees(t *testing.T) {
	t.Parallel()
	// The test runs as root on a pool machine, an admin; nobody is an
	// ordinary user (a real one: the stub starts jobs as their owner).
	c, admin := poolWithStubs(t, 3, "alpha")
	bob := c.ClientAs("nobody")
	rootJob := runJob(t, admin, shSpec("exit 0", 1))
	bobJob := runJob(t, bob, shSpec("exit 2", 1))

	mine, err := bob.History(ctx(t), client.HistoryQuery{})
	if err != nil {
		t.Fatalf("nobody's history: %v", err)
	}
	if got, want := attemptKeys(mine), []string{fmt.Sprintf("%d/0/1:failed", bobJob)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("nobody sees %v, want only their own %v", got, want)
	}
	if mine[0].Owner != "nobody" || mine[0].ExitCode != 2 || mine[0].Machine != "alpha" {
		t.Errorf("nobody's attempt = %+v, want owner nobody, exit 2 on alpha", mine[0])
	}
	_, err = bob.History(ctx(t), client.HistoryQuery{User: "root"})
	wantAPIErrorParts(t, err, http.StatusForbidden, "history of root", "admin_id")

	tests := []struct {
		name string
		q    client.HistoryQuery
		want []string
	}{
		{"all", client.HistoryQuery{}, []string{fmt.Sprintf("%d/0/1:exited", rootJob), fmt.Sprintf("%d/0/1:failed", bobJob)}},
		{"user", client.HistoryQuery{User: "nobody"}, []string{fmt.Sprintf("%d/0/1:failed", bobJob)}},
		{"state", client.HistoryQuery{State: "exited"}, []string{fmt.Sprintf("%d/0/1:exited", rootJob)}},
		{"machine", client.HistoryQuery{Machine: "alpha", State: "failed"}, []string{fmt.Sprintf("%d/0/1:failed", bobJob)}},
		{"other machine", client.HistoryQuery{Machine: "beta"}, []string{}},
		{"queue", client.HistoryQuery{Queue: "nosuch"}, []string{}},
		{"until", client.HistoryQuery{Until: time.Now().Add(-time.Hour)}, []string{}},
		{"since", client.HistoryQuery{Since: time.Now().Add(-time.Hour)}, []string{fmt.Sprintf("%d/0/1:exited", rootJob), fmt.Sprintf("%d/0/1:failed", bobJob)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := admin.History(ctx(t), tt.q)
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			if g := attemptKeys(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("History(%+v) = %v, want %v", tt.q, g, tt.want)
			}
		})
	}
}

// TestHistoryRangeIsForServers refuses the server-to-server range to a
// user.
func TestHistoryRangeIsForServers(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	resp, err := get(c, c.Servers[0].HTTPAddr(), "/v1/history/range?after=0&through=1")
	if err != nil {
		t.Fatalf("GET range: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a user's GET /v1/history/range: %s, want 403", resp.Status)
	}
}

// TestHistoryRetentionSweeps gives the servers a 2 s history retention:
// an attempt and its events are listed, then gone from every server.
func TestHistoryRetentionSweeps(t *testing.T) {
	t.Parallel()
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) { cfg.HistoryRetention = 2 * time.Second })
	c.WaitLeader()
	c.AddStub("alpha")
	cl := c.Client()
	testwait.For(t, 20*time.Second, "alpha up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	id := runJob(t, cl, shSpec("exit 0", 1))
	hs, err := cl.History(ctx(t), client.HistoryQuery{})
	if err != nil || len(hs) != 1 || hs[0].Job != id {
		t.Fatalf("history = %+v, %v; want job %d's attempt", hs, err, id)
	}
	for i, s := range c.Servers {
		testwait.For(t, 15*time.Second, fmt.Sprintf("s%d to sweep the attempt", i), func() bool {
			return len(staleHistory(t, c, s.HTTPAddr())) == 0
		})
		testwait.For(t, 15*time.Second, fmt.Sprintf("s%d to sweep the job's events", i), func() bool {
			for _, e := range staleEvents(t, c, s.HTTPAddr()) {
				if e.Job == id {
					return false
				}
			}
			return true
		})
	}
}

// TestDamagedHistoryStopsTheServer starts a server whose history.db is
// not a bbolt file: it refuses to start, naming the file and what to do.
func TestDamagedHistoryStopsTheServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "history.db"), bytes.Repeat([]byte("not bolt "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := server.New(server.Config{
		Name: "solo", DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: freeAddr(t), GossipAddr: "127.0.0.1:0",
		BootstrapExpect: 1, Logger: servertest.Logger(),
	})
	if !errors.Is(err, server.ErrDamagedDataDir) || !strings.Contains(err.Error(), "history.db") || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("start on a damaged history.db: err = %v, want ErrDamagedDataDir naming the file and what to do", err)
	}
}
