package main

import (
	"context"
	"encoding/json"
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

// fairShareRun is how long each of alice's jobs runs: the bound on how
// long bob's job may wait once a slot frees.
const fairShareRun = 3 * time.Second

// TestFairShareEndToEnd runs the case on a 3-server TLS cluster
// of real processes with two real users: on a pool of 2 slots alice
// submits 24 jobs, then bob one; bob's starts within one job's run time
// of a slot freeing, before any of alice's that waited. Then the
// per-user limits of a queue: bob's third job is refused naming
// nq_maxuser_queued, his second is held by nq_maxuser_active and
// netstatus --why says so, and alice's waiting work names fair share.
func TestFairShareEndToEnd(t *testing.T) {
	dir, c, root, alice, bob := twoUserCluster(t, "nmfa", "nmfb")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	db := fmt.Sprintf("machine %s = {nprocs=2}\nadd_q limited = {nq_maxuser_active=1, nq_maxuser_queued=2}\nfairshare_halflife = 1d\n", c.Stubs[0].Name)
	testwait.For(t, 60*time.Second, "fair share to be on", func() bool {
		rep, err := root.Share(ctx)
		return err == nil && rep.On
	})
	if _, err := root.LoadDatabase(ctx, client.DatabaseText{Filename: "share.db", Text: db}); err != nil {
		t.Fatalf("load the database: %v", err)
	}

	// alice: 24 jobs of fairShareRun each, 36 s of work on 2 slots.
	batch := filepath.Join(dir, "alice.jobs")
	line := fmt.Sprintf("/bin/sleep %d\n", int(fairShareRun/time.Second))
	if err := os.WriteFile(batch, []byte(strings.Repeat(line, 24)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, text := runAs(t, c, alice, "exec", "--batch", batch)
	if code != 0 {
		t.Fatalf("netmgr exec --batch as %s: exit %d\n%s", alice.name, code, text)
	}
	var aliceJobs []string
	for _, m := range regexp.MustCompile(`id (\d+) submitted`).FindAllStringSubmatch(text, -1) {
		aliceJobs = append(aliceJobs, m[1])
	}
	if len(aliceJobs) != 24 {
		t.Fatalf("alice's batch submitted %d jobs, want 24:\n%s", len(aliceJobs), text)
	}
	t.Cleanup(func() {
		for _, id := range aliceJobs {
			_, _ = root.Kill(context.Background(), id, client.KillRequest{Signal: "KILL"})
		}
	})
	// Bob submits once alice's first two run, so the pool is full.
	testwait.For(t, 60*time.Second, "alice's first jobs to run", func() bool {
		j, err := root.Job(ctx, aliceJobs[1])
		return err == nil && !j.Instances[0].StartedAt.IsZero()
	})
	code, text = runAs(t, c, bob, "exec", "/bin/sleep", "1")
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(text)
	if code != 0 || m == nil {
		t.Fatalf("netmgr exec as %s: exit %d\n%s", bob.name, code, text)
	}
	bobJob := m[1]
	var bobJ client.Job
	testwait.For(t, 60*time.Second, "bob's job to be placed", func() bool {
		var err error
		bobJ, err = root.Job(ctx, bobJob)
		return err == nil && !bobJ.Instances[0].PlacedAt.IsZero()
	})
	submitted, placed := bobJ.SubmittedAt, bobJ.Instances[0].PlacedAt
	// The first slot to free after bob's submit, and what alice placed
	// meanwhile.
	var freed time.Time
	for _, id := range aliceJobs {
		j, err := root.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		in := j.Instances[0]
		if e := in.EndedAt; !e.IsZero() && !e.Before(submitted) && (freed.IsZero() || e.Before(freed)) {
			freed = e
		}
		if p := in.PlacedAt; !p.IsZero() && p.After(submitted) && p.Before(placed) {
			t.Errorf("alice's job %s was placed at %s, after bob submitted (%s) and before bob's job was placed (%s)",
				id, p.Format(time.RFC3339Nano), submitted.Format(time.RFC3339Nano), placed.Format(time.RFC3339Nano))
		}
	}
	if freed.IsZero() {
		t.Fatalf("no slot freed after bob's submit at %s, yet bob's job was placed at %s", submitted, placed)
	}
	if wait := placed.Sub(freed); wait > fairShareRun {
		t.Errorf("bob's job was placed %v after a slot freed, want within one job's run time (%v)", wait, fairShareRun)
	}
	t.Logf("bob's job placed %v after the first slot freed (%v after his submit)", placed.Sub(freed), placed.Sub(submitted))

	// netmgr share, as bob: alice has used more, so her factor is lower.
	code, text = runAs(t, c, bob, "share", "--json")
	var rep client.ShareReport
	if code != 0 || json.Unmarshal([]byte(text), &rep) != nil {
		t.Fatalf("netmgr share --json as %s: exit %d\n%s", bob.name, code, text)
	}
	factors := map[string]float64{}
	for _, r := range rep.Rows {
		if r.User != "" {
			factors[r.User] = r.Factor
		}
	}
	if !rep.On || rep.HalfLifeSeconds != 86400 || factors[alice.name] >= 1 || factors[alice.name] >= factors[bob.name] {
		t.Errorf("netmgr share: on %v, half-life %d, factors %v: want alice's below bob's and 1\n%s", rep.On, rep.HalfLifeSeconds, factors, text)
	}

	// Per-user limits of queue limited: two jobs, the third refused.
	var limited []string
	for range 2 {
		code, text = runAs(t, c, bob, "exec", "--queue", "limited", "/bin/sleep", "120")
		m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(text)
		if code != 0 || m == nil {
			t.Fatalf("netmgr exec --queue limited as %s: exit %d\n%s", bob.name, code, text)
		}
		limited = append(limited, m[1])
	}
	t.Cleanup(func() {
		for _, id := range limited {
			_, _ = root.Kill(context.Background(), id, client.KillRequest{Signal: "KILL"})
		}
	})
	code, text = runAs(t, c, bob, "exec", "--queue", "limited", "/bin/sleep", "120")
	if code == 0 || !strings.Contains(text, "nq_maxuser_queued=2") || !strings.Contains(text, bob.name) {
		t.Errorf("bob's third job in queue limited: exit %d\n%s\nwant a refusal naming nq_maxuser_queued=2 and bob", code, text)
	}
	testwait.For(t, 60*time.Second, "bob's first limited job to run", func() bool {
		j, err := root.Job(ctx, limited[0])
		return err == nil && !j.Instances[0].StartedAt.IsZero()
	})
	testwait.For(t, 30*time.Second, "netstatus --why to name nq_maxuser_active for bob's second", func() bool {
		code, text = runAs(t, c, bob, "status", "--why", limited[1])
		return code == 0 && strings.Contains(text, "nq_maxuser_active=1")
	})
	// alice's waiting work is behind bob's held job, which fair share put
	// first though submitted later.
	var waiting string
	for _, id := range aliceJobs {
		if j, err := root.Job(ctx, id); err == nil && j.Instances[0].State == client.InstanceQueued {
			waiting = id
		}
	}
	if waiting == "" {
		t.Logf("alice has no job left waiting: no fair-share reason to check")
		return
	}
	code, text = runAs(t, c, alice, "status", "--why", waiting)
	if code != 0 || !strings.Contains(text, "users with lower usage (your factor") {
		t.Errorf("netstatus --why %s as alice: exit %d\n%s\nwant it to name fair share", waiting, code, text)
	}
}
