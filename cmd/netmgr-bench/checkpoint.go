package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// checkpointSize is the checkpoint each measured job keeps.
const checkpointSize = 100 << 20

// checkpointSamples is how many jobs are measured (quick: fewer).
const (
	checkpointSamples      = 5
	checkpointSamplesQuick = 2
)

// checkpointScript writes 100 MiB of random data to state.bin and exits
// 85 (its checkpoint code) when it has none; with one (its checkpoint,
// restored), it checks its size and exits 0.
const checkpointScript = `#!/bin/sh
if [ -f state.bin ]; then
	[ "$(wc -c < state.bin)" -eq ` + "104857600" + ` ] && exit 0
	exit 3
fi
head -c 104857600 /dev/urandom > state.bin
exit 85
`

// checkpointSuite measures a 100 MiB checkpoint kept and restored on
// loopback: from the first attempt's exit with its checkpoint code to the
// end of the second, which only checks the restored file's size (both
// its supervisors' clocks; one host, one clock). In
// between, the stub archives the file, sends it to a server that answers
// once a majority keep it, commits CheckpointKept and the attempt's end;
// the leader places the next attempt, whose stub fetches the archive and
// unpacks it before the program starts. The keep alone is the exit to the
// commit (the leader's clock).
func checkpointSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "checkpoint")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "checkpoint", servers: cfg.servers, stubs: cfg.stubs, serverArgs: []string{"--max-copy-size", "256"}}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		return checkpointOn(ctx, cfg, dir, cl)
	})
}

// checkpointOn is checkpointSuite on a ready cluster, through cl.
func checkpointOn(ctx context.Context, cfg config, dir string, cl *client.Client) ([]figure, error) {
	n := checkpointSamples
	if cfg.quick {
		n = checkpointSamplesQuick
	}
	script := filepath.Join(dir, "checkpoint.sh")
	if err := os.WriteFile(script, []byte(checkpointScript), 0o755); err != nil {
		return nil, err
	}
	var round, kept []float64
	for i := -1; i < n; i++ { // one warm-up
		r, k, err := checkpointRound(ctx, cl, script)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		if i >= 0 {
			round, kept = append(round, r), append(kept, k)
		}
	}
	note := fmt.Sprintf("%d jobs, one at a time, each keeping then restoring %d MiB, on %d servers and %d stubs", n, checkpointSize>>20, cfg.servers, cfg.stubs)
	return []figure{
		{Name: "checkpoint 100 MiB: exit -> kept, restored, next attempt run (ends at once)", Unit: "ms", Sample: summarize(round), Target: "p50 < 2000 ms", Note: note},
		{Name: "checkpoint 100 MiB: exit -> kept by a majority, committed", Unit: "ms", Sample: summarize(kept), Note: note},
	}, nil
}

// checkpointRound runs one job that keeps a checkpoint once and ends
// after its restored attempt, and returns the milliseconds from the first
// attempt's end to the second's end, and to the checkpoint's commit.
func checkpointRound(ctx context.Context, cl *client.Client, script string) (round, kept float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*opTimeout)
	defer cancel()
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: script}, Checkpoint: []string{"state.bin"}, CheckpointExit: 85,
	}})
	if err != nil {
		return 0, 0, err
	}
	ref := strconv.FormatUint(sub.ID, 10)
	if _, err := cl.WaitJob(ctx, ref, client.WaitDone); err != nil {
		return 0, 0, err
	}
	job, err := cl.Job(ctx, ref)
	if err != nil {
		return 0, 0, err
	}
	in := job.Instances[0]
	if in.State != client.InstanceExited || in.ExitCode != 0 || in.Attempt != 2 || len(in.History) != 1 || in.Checkpoint == nil {
		return 0, 0, fmt.Errorf("job %d ended %s exit %d at attempt %d with checkpoint %v: want attempt 2 exited 0 from attempt 1's checkpoint",
			sub.ID, in.State, in.ExitCode, in.Attempt, in.Checkpoint != nil)
	}
	end := in.History[0].EndedAt
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// The second attempt's end, not its start: the stub stamps the start
	// when the Start arrives, before it restores the checkpoint; the
	// attempt itself only checks the file's size and exits.
	return ms(in.EndedAt.Sub(end)), ms(in.Checkpoint.At.Sub(end)), nil
}
