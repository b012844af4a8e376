package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// TestInteractiveQueueE2E: with the pool's one slot busy and a batch job
// of a higher-priority queue waiting, netexec -i (no -q) goes to the
// queue marked interactive=yes and takes the slot when it frees, before
// the batch job submitted earlier; netstatus -q shows the queue first.
func TestInteractiveQueueE2E(t *testing.T) {
	t.Parallel()
	c, u, root := ptyUserClient(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := fmt.Sprintf("allow_root_jobs\nmachine %s = {nprocs=1}\nadd_q batch = {priority=9}\nadd_q now = {interactive=yes}\n", c.Stubs[0].Name)
	if _, err := root.LoadDatabase(ctx, client.DatabaseText{Filename: "interactive.db", Text: db}); err != nil {
		t.Fatalf("load the database: %v", err)
	}

	code, out := runAs(t, c, u, "exec", "--queue", "batch", "/bin/sleep", "600")
	if code != 0 {
		t.Fatalf("netexec --queue batch: %d %s", code, out)
	}
	running := jobIDIn(t, out)
	runningAs(t, c, u, running)
	code, out = runAs(t, c, u, "exec", "--queue", "batch", "/bin/sleep", "600")
	if code != 0 {
		t.Fatalf("netexec --queue batch: %d %s", code, out)
	}
	backlog := jobIDIn(t, out)
	t.Cleanup(func() {
		for _, id := range []string{running, backlog} {
			_, _ = root.Kill(context.Background(), id, client.KillRequest{Signal: "KILL"})
		}
	})

	cmd := userCmd(t, c, u, "exec", "-i", "/bin/sh", "-c", "cat; echo done")
	cmd.Stdin = strings.NewReader("typed ")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var interactive client.Job
	testwait.For(t, 60*time.Second, "the interactive job to wait in queue now", func() bool {
		jobs, err := root.Jobs(ctx)
		for _, j := range jobs {
			if j.Owner == u.name && j.Spec.Queue == "now" {
				interactive = j
			}
		}
		return err == nil && interactive.ID != 0
	})
	if code, out := runNetmgr(t, c.Env(), "status", "-q"); code != 0 || !strings.Contains(strings.SplitN(out, "\n", 3)[1], "now") ||
		!strings.Contains(out, "interactive") {
		t.Errorf("netstatus -q: exit %d, want queue now first, its priority shown as interactive:\n%s", code, out)
	}

	if _, err := root.Kill(ctx, running, client.KillRequest{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("netexec -i exited %d: %s", code, stderr.String())
	}
	if got := stdout.String(); got != "typed done\n" {
		t.Errorf("netexec -i printed %q, want %q", got, "typed done\n")
	}
	first, err := root.Job(ctx, fmt.Sprint(interactive.ID))
	if err != nil {
		t.Fatal(err)
	}
	later, err := root.Job(ctx, backlog)
	if err != nil {
		t.Fatal(err)
	}
	if at := later.Instances[0].PlacedAt; !at.IsZero() && !at.After(first.Instances[0].PlacedAt) {
		t.Errorf("batch job %s was placed at %v, the interactive job at %v: the interactive queue did not go first",
			backlog, at, first.Instances[0].PlacedAt)
	}
}
