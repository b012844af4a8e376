package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/server/servertest"
)

// filesInputSize is the copy_in of each measured job.
const filesInputSize = 10 << 20

// filesSamples is how many jobs of each kind are measured (quick: fewer).
const (
	filesSamples      = 15
	filesSamplesQuick = 5
)

// filesSuite measures how soon a job with 10 MiB of copy_in runs: from
// the moment netexec would start packing its files (pack, send to a
// server that answers once a majority keep them, submit) to the
// instance's start as its stub stamps it (one clock: every process runs
// on this host). The same jobs without files, one after another on the
// same cluster, are the A/B baseline: submit to start.
func filesSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "files")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	spec := clusterSpec{suite: "files", servers: cfg.servers, stubs: cfg.stubs}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		return filesOn(ctx, cfg, dir, c, cl)
	})
}

// filesOn is filesSuite on c, a ready cluster, through cl.
func filesOn(ctx context.Context, cfg config, dir string, c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
	n := filesSamples
	if cfg.quick {
		n = filesSamplesQuick
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	input := make([]byte, filesInputSize)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range input {
		input[i] = byte(r.Uint32())
	}
	var withFiles, without []float64
	for i := -warmup; i < n; i++ {
		// A different input each time: no archive is kept already.
		copy(input, strconv.Itoa(i)+"-"+strconv.FormatInt(time.Now().UnixNano(), 10))
		if err := os.WriteFile(filepath.Join(src, "in.bin"), input, 0o644); err != nil {
			return nil, err
		}
		ms, err := timeToStart(ctx, cl, src, true)
		if err != nil {
			return nil, fmt.Errorf("files: job with copy_in: %w", err)
		}
		base, err := timeToStart(ctx, cl, src, false)
		if err != nil {
			return nil, fmt.Errorf("files: job without files: %w", err)
		}
		if i >= 0 {
			withFiles, without = append(withFiles, ms), append(without, base)
		}
	}
	note := fmt.Sprintf("%d jobs of each kind, one at a time, alternating, on %d servers and %d stubs", n, cfg.servers, cfg.stubs)
	return []figure{
		{Name: "copy_in 10 MiB: pack+send+submit -> running", Unit: "ms", Sample: summarize(withFiles), Target: "p50 <= 1000 ms", Note: note},
		{Name: "no files: submit -> running (A/B baseline)", Unit: "ms", Sample: summarize(without), Note: note},
	}, nil
}

// timeToStart runs one job, sleeping briefly, with src/in.bin as its
// copy_in when withFiles, and returns the milliseconds from before the
// packing (or the submit) to its instance's start.
func timeToStart(ctx context.Context, cl *client.Client, src string, withFiles bool) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	start := time.Now()
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: trueBinary()}}
	if withFiles {
		data, names, err := files.Pack([]string{"in.bin"}, src, 0)
		if err != nil {
			return 0, err
		}
		if _, err := cl.PutBlob(ctx, data); err != nil {
			return 0, err
		}
		spec.CopyIn, spec.CopyInBlob, spec.CopyInSize = names, files.Sum(data), int64(len(data))
	}
	sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: spec})
	if err != nil {
		return 0, err
	}
	job, err := cl.WaitJob(ctx, strconv.FormatUint(sub.ID, 10), client.WaitStarted)
	if err != nil {
		return 0, err
	}
	at := job.Instances[0].StartedAt
	if at.IsZero() {
		return 0, fmt.Errorf("job %d: no start time", sub.ID)
	}
	return float64(at.Sub(start).Microseconds()) / 1000, nil
}
