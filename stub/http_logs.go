package stub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/beneath"
)

// Logs: GET /v1/logs serves an attempt's stdout or stderr, the file of
// its exec dir, from an offset, to a server (which passes it on to the
// user netmgr logs runs for, having checked who that is). With follow
// it goes on sending what the attempt writes, looking every
// logFollowEvery, until the attempt has ended and the file is drained.

// logFollowEvery is how often a followed log looks for more output.
const logFollowEvery = 50 * time.Millisecond

// errExecDirRemoved means an attempt's exec dir, and its output with it,
// was removed after the exec retention.
var errExecDirRemoved = errors.New("its exec dir was removed after the exec retention")

// logSource is where an attempt's output is, and how to tell that the
// attempt writes no more.
type logSource struct {
	dir     string
	ended   func() bool
	endedAt func() time.Time // zero while it runs
}

// logSource returns attempt k's, waiting (until ctx ends) for a Start in
// flight to decide.
func (r *runner) logSource(ctx context.Context, k client.AttemptRef) (logSource, error) {
	r.mu.Lock()
	a, ok := r.attempts[k]
	r.mu.Unlock()
	if !ok {
		return logSource{}, fmt.Errorf("attempt %s on %s: %w (never started here, or its record is gone)", k, r.machine, ErrUnknownAttempt)
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		return logSource{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case a.rec.Removed:
		return logSource{}, fmt.Errorf("output of attempt %s on %s (ended %s): %w",
			k, r.machine, a.rec.EndedAt.Format(time.RFC3339), errExecDirRemoved)
	case a.rec.ExecDir == "" && !a.supervised:
		return logSource{}, fmt.Errorf("attempt %s on %s never ran (its start failed): it has no output", k, r.machine)
	}
	dir := a.rec.ExecDir
	if dir == "" { // a record of a stub that predates ExecDir
		dir = r.attemptDir(k)
	}
	ended := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !a.running()
	}
	endedAt := func() time.Time {
		r.mu.Lock()
		defer r.mu.Unlock()
		return a.rec.EndedAt
	}
	return logSource{dir: dir, ended: ended, endedAt: endedAt}, nil
}

func (s *Stub) handleLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var k client.AttemptRef
	var offset int64
	var err error
	if k.JobID, err = strconv.ParseUint(q.Get("job"), 10, 64); err == nil {
		if k.Instance, err = strconv.Atoi(q.Get("instance")); err == nil {
			k.Attempt, err = strconv.ParseUint(q.Get("attempt"), 10, 64)
		}
	}
	if err == nil && q.Has("offset") {
		offset, err = strconv.ParseInt(q.Get("offset"), 10, 64)
		if err == nil && offset < 0 {
			err = errors.New("negative offset")
		}
	}
	stream := q.Get("stream")
	if err == nil && stream != client.LogStdout && stream != client.LogStderr {
		err = fmt.Errorf("stream %q: want %s or %s", stream, client.LogStdout, client.LogStderr)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("logs: %w", err))
		return
	}
	follow := q.Get("follow") != "" && q.Get("follow") != "0"
	src, err := s.runner.logSource(r.Context(), k)
	switch {
	case errors.Is(err, ErrUnknownAttempt):
		writeError(w, http.StatusNotFound, err)
		return
	case errors.Is(err, errExecDirRemoved):
		writeError(w, http.StatusGone, err)
		return
	case r.Context().Err() != nil:
		return
	case err != nil:
		writeError(w, http.StatusNotFound, err)
		return
	}
	f, err := openOutput(src.dir, stream)
	if errors.Is(err, os.ErrNotExist) {
		// The sweeper removes the directory before it records that it did.
		if at := src.endedAt(); !at.IsZero() && time.Since(at) >= s.execs.retention {
			writeError(w, http.StatusGone, fmt.Errorf("output of attempt %s on %s (ended %s): %w",
				k, s.cfg.Name, at.Format(time.RFC3339), errExecDirRemoved))
			return
		}
		writeError(w, http.StatusGone, fmt.Errorf("%s of attempt %s on %s: the file is gone (%s removed by someone else?)", stream, k, s.cfg.Name, src.dir))
		return
	}
	if errors.Is(err, errNotShown) {
		writeError(w, http.StatusForbidden, fmt.Errorf("%s of job %d instance %d %w", stream, k.JobID, k.Instance, err))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("open %s of attempt %s: %w", stream, k, err))
		return
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("seek %s of attempt %s: %w", stream, k, err))
		return
	}
	s.metrics.logStreams.Add(1)
	defer s.metrics.logStreams.Add(-1)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	// A stub shutting down ends the stream as broken, not as complete.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.logsDone, cancel)()
	if err := sendLog(ctx, w, f, follow, src.ended); err != nil {
		s.log.Debug("log stream ended early", "attempt", k, "stream", stream, "err", err)
		panic(http.ErrAbortHandler) // the reader sees the stream break
	}
}

// errNotShown marks an output file the job replaced with something the
// stub will not read for it.
var errNotShown = errors.New("not shown")

// openOutput opens the output file stream of the exec dir dir as the
// job's owner could, through no link: the job may have replaced it with
// a link to a file it may not read, a FIFO, or a hard link to another
// user's file, and the stub reading it runs as root. A file the job
// replaced so is refused with errNotShown, saying what it is now. The
// file is opened once: a followed log goes on reading the file opened,
// whatever the job does to the name afterwards.
func openOutput(dir, stream string) (*os.File, error) {
	d, err := beneath.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	f, _, err := d.OpenRegular(stream)
	var what string
	switch {
	case errors.Is(err, beneath.ErrLink):
		what = "a link"
	case errors.Is(err, beneath.ErrNotRegular):
		what = "a FIFO, socket, device or directory"
		if fi, serr := d.Lstat(stream); serr == nil {
			what = beneath.Kind(fi.Mode())
		}
	case errors.Is(err, beneath.ErrNotOwners):
		what = "a file its owner may not read, linked in"
	default:
		return f, err
	}
	return nil, fmt.Errorf("is no longer a regular file (%s): %w", what, errNotShown)
}

// sendLog copies f to w, flushing as it goes. With follow it then looks
// for more every logFollowEvery until ended says the attempt writes no
// more (and what it wrote last is sent) or ctx ends.
func sendLog(ctx context.Context, w http.ResponseWriter, f *os.File, follow bool, ended func() bool) error {
	rc := http.NewResponseController(w)
	var tick *time.Ticker
	if follow {
		tick = time.NewTicker(logFollowEvery)
		defer tick.Stop()
	}
	buf := make([]byte, 32<<10)
	for {
		// Ended is asked before the file is read to its end: whatever
		// the attempt wrote before it ended is then sent.
		done := !follow || ended()
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return fmt.Errorf("send log: %w", werr)
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read log: %w", err)
			}
		}
		if err := rc.Flush(); err != nil {
			return fmt.Errorf("send log: %w", err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
