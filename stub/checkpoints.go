package stub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/stub/ckptcache"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// Checkpoints (JobSpec.Checkpoint, fsm/checkpoints.go). An attempt that
// exits with its job's checkpoint code has, before its CHILD_TERM is
// recorded, the files its checkpoint paths name archived from its exec
// dir (files.PackGlobs: relative to the dir, no link followed, regular
// files and directories only, never blocking on a FIFO), sent to a
// server, which answers once a majority keep them, and committed as the
// instance's newest checkpoint (CheckpointKept; keepCheckpoint). The
// servers then start the instance again at once, and every later attempt
// has the newest checkpoint unpacked into its exec dir before the
// program starts (restoreCheckpoint), as copy_in files are: from the
// stub's own copy (stub/ckptcache) when this machine kept it, else from
// the servers. A stub
// stopped in between records no end; the stub that takes the attempt
// over sends the checkpoint again (the same archive, the same entry).
//
// stopForCheckpoint is how the stub ends such an attempt for someone
// else's sake (the owner policy's vacate; preemption may use it too):
// the job's checkpoint signal first, SIGKILL only after its grace.

// errCheckpoint marks a checkpoint that could not be put in place.
var errCheckpoint = errors.New("checkpoint")

// restoreCheckpoint unpacks the instance's newest checkpoint into the
// exec dir dir, before the job starts.
func (r *runner) restoreCheckpoint(ctx context.Context, k client.AttemptRef, req client.StartRequest, dir string) error {
	c := r.blobClient()
	if c == nil {
		return fmt.Errorf("%w: no server known to fetch it from", errCheckpoint)
	}
	start := time.Now()
	data, local := r.ckpts.get(req.CheckpointBlob)
	if !local {
		var err error
		if data, err = c.Blob(ctx, req.CheckpointBlob); err != nil {
			return fmt.Errorf("%w: fetch %.12s: %w", errCheckpoint, req.CheckpointBlob, err)
		}
	}
	names, err := files.Unpack(data, dir)
	if err != nil {
		return fmt.Errorf("%w: %w", errCheckpoint, err)
	}
	r.log.Info("checkpoint restored", "attempt", k, "files", len(names), "size", len(data), "local", local, "took", time.Since(start))
	return nil
}

// ckptCache opens the stub's checkpoint cache in dataDir on first use,
// so that a machine that never keeps one (a simulated one) makes no
// directory.
type ckptCache struct {
	dataDir string
	log     *slog.Logger
	once    sync.Once
	cache   *ckptcache.Cache // nil when it could not be opened
}

// open returns the cache, nil (logged once) when it cannot be opened:
// checkpoints then always come from the servers.
func (c *ckptCache) open() *ckptcache.Cache {
	c.once.Do(func() {
		if c.dataDir == "" {
			return
		}
		cache, err := ckptcache.Open(filepath.Join(c.dataDir, checkpointsDir))
		if err != nil {
			c.log.Warn("checkpoints will be fetched from the servers", "err", err)
			return
		}
		c.cache = cache
	})
	return c.cache
}

// get returns the checkpoint sum from the cache, and whether it was there
// whole.
func (c *ckptCache) get(sum string) ([]byte, bool) {
	cache := c.open()
	if cache == nil {
		return nil, false
	}
	return cache.Get(sum)
}

// put keeps a copy of the checkpoint sum; a failure only costs a fetch.
func (c *ckptCache) put(sum string, data []byte) {
	cache := c.open()
	if cache == nil {
		return
	}
	if err := cache.Put(sum, data); err != nil {
		c.log.Warn("checkpoint not cached; a restart here fetches it", "err", err)
	}
}

// isCheckpointExit reports whether res, the end of an attempt recorded
// as rec, is its job's checkpoint exit.
func isCheckpointExit(rec outbox.Record, res supervisor.Result) bool {
	return len(rec.Checkpoint) > 0 && rec.CheckpointExit != 0 && res.Signal == "" && res.Error == "" &&
		res.ExitCode == rec.CheckpointExit
}

// checkpoint keeps attempt k's checkpoint when res is its checkpoint
// exit, before its end is recorded; false means the runner closed first.
func (r *runner) checkpoint(k client.AttemptRef, a *attempt, res supervisor.Result) bool {
	r.mu.Lock()
	rec := a.rec
	r.mu.Unlock()
	if !isCheckpointExit(rec, res) {
		return true
	}
	return r.keepCheckpoint(k, rec)
}

// keepCheckpoint has the servers keep attempt k's checkpoint files from
// its exec dir, retrying until they do, refuse it for good, or the runner
// closes (false: the end must not be recorded; a later stub sends it).
// A checkpoint that cannot be kept (nothing matched, over a limit) is
// logged: the attempt's end is then an ordinary failure.
func (r *runner) keepCheckpoint(k client.AttemptRef, rec outbox.Record) bool {
	if rec.ExecDir == "" {
		r.log.Warn("checkpoint not kept: the attempt had no exec dir", "attempt", k)
		return true
	}
	start := time.Now()
	data, kept, lost, err := files.PackGlobs(rec.ExecDir, rec.Checkpoint, rec.CopyOutMax)
	if err != nil || data == nil || len(lost) > 0 {
		// A partial checkpoint is no checkpoint: the job would start
		// from a state it never wrote.
		r.log.Warn("checkpoint not kept", "attempt", k, "lost", lost, "err", err)
		return true
	}
	req := client.KeepCheckpointRequest{At: time.Now().UTC(), JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt,
		Machine: r.machine, Blob: files.Sum(data), Size: int64(len(data)), Files: kept}
	backoff := 100 * time.Millisecond
	for {
		err := r.sendCheckpoint(req, data)
		var apiErr *client.APIError
		switch {
		case err == nil:
			r.ckpts.put(req.Blob, data)
			r.log.Info("checkpoint kept", "attempt", k, "files", len(kept), "size", req.Size, "took", time.Since(start))
			return true
		case errors.As(err, &apiErr) && apiErr.Status != http.StatusConflict && apiErr.Status < 500:
			// Refused for good: over the quota, or the attempt is no
			// longer current (410).
			r.log.Warn("checkpoint not kept", "attempt", k, "err", err)
			return true
		}
		r.log.Warn("checkpoint not kept yet; trying again", "attempt", k, "err", err, "in", backoff)
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, filesRetryMax)
	}
}

// sendCheckpoint sends the archive data, then the record req.
func (r *runner) sendCheckpoint(req client.KeepCheckpointRequest, data []byte) error {
	c := r.blobClient()
	if c == nil {
		return errors.New("no server known")
	}
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	if _, err := c.PutBlobSum(ctx, req.Blob, data); err != nil {
		return fmt.Errorf("send checkpoint: %w", err)
	}
	if err := c.KeepCheckpoint(ctx, req); err != nil {
		return fmt.Errorf("record checkpoint: %w", err)
	}
	return nil
}

// stopForCheckpoint ends running attempt k for someone else's sake (its
// machine's owner, a preemption): a job that checkpoints gets its
// checkpoint signal (--signal, else TERM) and SIGKILL only after its
// grace, time to write its checkpoint and exit with its code; any other
// job gets SIGKILL at once. A stopped job is continued after the signal
// is sent, so it sees it at once. It does not wait for the end: the
// attempt's watcher records it, keeping the checkpoint first. It
// reports whether the job was asked to checkpoint.
func (r *runner) stopForCheckpoint(ctx context.Context, k client.AttemptRef) (asked bool, err error) {
	r.mu.Lock()
	a, ok := r.attempts[k]
	var rec outbox.Record
	if ok {
		rec = a.rec
	}
	r.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("stop attempt %s: %w", k, ErrUnknownAttempt)
	}
	sig, grace := checkpointSignal(rec)
	if sig == 0 {
		return false, r.signal(ctx, k, unix.SIGKILL, 0)
	}
	if err := r.signal(ctx, k, sig, grace); err != nil {
		return false, err
	}
	if err := r.signal(ctx, k, unix.SIGCONT, 0); err != nil {
		return true, err
	}
	return true, nil
}

// checkpointSignal is the signal and grace that ask the job of rec to
// checkpoint and exit; 0 when it keeps no checkpoint (or the signal is
// unknown).
func checkpointSignal(rec outbox.Record) (unix.Signal, time.Duration) {
	if len(rec.Checkpoint) == 0 || rec.CheckpointExit == 0 {
		return 0, 0
	}
	name := rec.CheckpointSignal
	if name == "" {
		name = "TERM"
	}
	sig := unix.SignalNum("SIG" + name)
	if sig == 0 {
		return 0, 0
	}
	grace := time.Duration(rec.GraceMS) * time.Millisecond
	if grace <= 0 {
		grace = defaultCheckpointGrace
	}
	return sig, grace
}

// defaultCheckpointGrace is how long a job asked to checkpoint has when
// its Start named no grace.
const defaultCheckpointGrace = 10 * time.Second
