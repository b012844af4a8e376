package stub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/stub/outbox"
)

// Files a job moves (copy_in, copy_out; the servers' blobs.go). Before
// the job starts, the stub fetches its copy_in archive from a server,
// checks it against its sha256 and unpacks it into the exec dir
// (copyIn). When an attempt ends, before its CHILD_TERM is recorded, the
// stub archives the copy_out files from the exec dir, sends the archive
// to a server, which answers once a majority keep it, and has the leader
// commit an OutputsKept naming it (keepOutputs). So an attempt whose end
// is known has its outputs kept, and the exec dir (removed only after the
// end is recorded) is never removed first. A stub stopped in between
// records no end; the stub that takes the attempt over finds its result
// and sends the outputs again (the same archive, the same entry).

// errCopyIn marks a copy_in that could not be put in place.
var errCopyIn = errors.New("copy_in")

// filesRetryMax bounds the backoff between tries to keep outputs.
const filesRetryMax = 5 * time.Second

// copyIn puts the job's copy_in files in the exec dir dir.
func (r *runner) copyIn(ctx context.Context, req client.StartRequest, dir string) error {
	c := r.blobClient()
	if c == nil {
		return fmt.Errorf("%w: no server known to fetch the files from", errCopyIn)
	}
	data, err := c.Blob(ctx, req.CopyInBlob)
	if err != nil {
		return fmt.Errorf("%w: fetch files %.12s: %w", errCopyIn, req.CopyInBlob, err)
	}
	if _, err := files.Unpack(data, dir); err != nil {
		return fmt.Errorf("%w: %w", errCopyIn, err)
	}
	return nil
}

// serverClient is the client of the server group, nil when none is known
// (or in tests without one).
func (r *runner) serverClient() *client.Client {
	if r.servers == nil {
		return nil
	}
	return r.servers.client()
}

// keepOutputs has the servers keep attempt k's copy_out files from its
// exec dir, retrying until they do or the runner closes (false: the end
// must not be recorded; a later stub sends them). Archive and record go
// separately: an archive the servers refuse for good (over their limit)
// is left out, and the record says so in its Lost, so that `netmgr fetch`
// says what was lost and why. The attempt's own end is not changed.
func (r *runner) keepOutputs(k client.AttemptRef, rec outbox.Record) bool {
	if len(rec.CopyOut) == 0 {
		return true
	}
	req := client.KeepOutputsRequest{At: time.Now().UTC(), JobID: k.JobID, Instance: k.Instance, Attempt: k.Attempt, Machine: r.machine}
	var data []byte
	if rec.ExecDir == "" {
		req.Lost = []string{"all files: the attempt had no exec dir"}
	} else {
		var err error
		data, req.Files, req.Lost, err = files.PackGlobs(rec.ExecDir, rec.CopyOut, rec.CopyOutMax)
		if err != nil {
			req.Lost = append(req.Lost, err.Error())
		}
		if data != nil {
			req.Blob, req.Size = files.Sum(data), int64(len(data))
		}
	}
	backoff := 100 * time.Millisecond
	for {
		err := r.sendOutputs(&req, &data)
		var apiErr *client.APIError
		switch {
		case err == nil:
			r.log.Info("outputs kept", "attempt", k, "files", len(req.Files), "size", req.Size, "lost", req.Lost)
			return true
		case errors.As(err, &apiErr) && apiErr.Status != http.StatusConflict && apiErr.Status < 500:
			// The record refused for good (the job is gone): nothing
			// can keep it.
			r.log.Warn("outputs not kept", "attempt", k, "err", err)
			return true
		}
		r.log.Warn("outputs not kept yet; trying again", "attempt", k, "err", err, "in", backoff)
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, filesRetryMax)
	}
}

// sendOutputs sends the archive *data (if any), then the record req. An
// archive the servers refuse for good is dropped from both, the refusal
// going into req.Lost.
func (r *runner) sendOutputs(req *client.KeepOutputsRequest, data *[]byte) error {
	c := r.blobClient()
	if c == nil {
		return errors.New("no server known")
	}
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	if *data != nil {
		_, err := c.PutBlob(ctx, *data)
		var apiErr *client.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.Status < 500:
			req.Lost = append(req.Lost, fmt.Sprintf("%s (%s): %s", strings.Join(req.Files, " "), files.Size(req.Size), apiErr.Message))
			req.Blob, req.Size, req.Files, *data = "", 0, nil, nil
		case err != nil:
			return fmt.Errorf("send outputs: %w", err)
		}
	}
	if err := c.KeepOutputs(ctx, *req); err != nil {
		return fmt.Errorf("record outputs: %w", err)
	}
	return nil
}

// blobClient is the client of the server group for moving files
// (copy_in, copy_out, checkpoints): without the one-second bound on each
// server tried that suits CHILD events, since 100 MiB may take longer on
// a loaded machine (the HTTP client's own 70 s bound stays); nil when no
// server is known.
func (r *runner) blobClient() *client.Client {
	c := r.serverClient()
	if c == nil {
		return nil
	}
	return c.With(client.WithTryTimeout(0))
}
