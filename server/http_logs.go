package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Logs: GET /v1/jobs/{ref}/logs passes on an instance's stdout or stderr
// from the stub that ran it (GET /v1/logs there), so that the user needs
// no route to the stubs. It is a read like GET /v1/jobs/{ref}: the leader
// answers (a follower redirects, so a job just submitted is found), or
// with ?stale any server from its own view. The server checks that the
// caller may act on the job, finds the
// instance's current attempt (or its last one) and its machine, and
// streams the stub's answer back, flushing as it comes. A stream that
// breaks (the stub went) breaks for the caller too rather than end as
// if complete.

// logsStartWait bounds how long a followed instance whose start is in
// flight (placed, its stub not told yet) is waited for.
const logsStartWait = 30 * time.Second

// errNotStarted means an instance has run no attempt yet.
var errNotStarted = errors.New("has not started yet")

// logTarget is the attempt whose output a logs request reads.
type logTarget struct {
	ref     client.AttemptRef
	machine string
	addr    string
	placed  bool // the attempt is placed and may not have reached its stub
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	stream := q.Get("stream")
	if stream == "" {
		stream = client.LogStdout
	}
	if stream != client.LogStdout && stream != client.LogStderr {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("logs: stream=%q: want %s or %s", stream, client.LogStdout, client.LogStderr))
		return
	}
	instance := 0
	if v := q.Get("instance"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeError(w, http.StatusBadRequest, fmt.Errorf("logs: instance=%q: not an instance number", v))
			return
		}
		instance = n
	}
	follow := q.Get("follow") != "" && q.Get("follow") != "0"
	id, _, ok := s.resolveControlled(w, r, "read the output of")
	if !ok {
		return
	}
	body, status, err := s.openLog(r.Context(), id, instance, stream, follow)
	if err != nil {
		if r.Context().Err() == nil {
			s.writeError(w, status, err)
		}
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the caller went; closing body ends the stub's stream
			}
			if rc.Flush() != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			if r.Context().Err() != nil {
				return // the caller went, which ended the stub's stream
			}
			s.log.Warn("log stream from a stub broke", "job", id, "instance", instance, "err", err)
			panic(http.ErrAbortHandler) // the caller sees the stream break
		}
	}
}

// openLog opens the stream of instance's output from its stub and
// returns it, or the HTTP status and error to answer with. A followed
// instance that has not started is waited for as long as ctx lasts, and
// one whose attempt is placed but not yet known to its stub for at most
// logsStartWait.
func (s *Server) openLog(ctx context.Context, id uint64, instance int, stream string, follow bool) (io.ReadCloser, int, error) {
	deadline := time.Now().Add(logsStartWait)
	for {
		_, changed := s.fsm.Watch()
		t, status, err := s.logTarget(id, instance)
		if err != nil && follow && errors.Is(err, errNotStarted) {
			// Followed before it started: wait, as long as the caller
			// does, for it to be placed (or to end without running).
			select {
			case <-changed:
				deadline = time.Now().Add(logsStartWait)
				continue
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case <-s.ctx.Done():
				return nil, http.StatusServiceUnavailable, errors.New("server shutting down")
			}
		}
		if err != nil {
			return nil, status, err
		}
		c, err := s.stubClient(t.machine, t.addr)
		if err != nil {
			return nil, http.StatusInternalServerError, fmt.Errorf("client of the stub of %s: %w", t.machine, err)
		}
		body, err := c.Log(ctx, client.LogRequest{AttemptRef: t.ref, Stream: stream, Follow: follow})
		var apiErr *client.APIError
		switch {
		case err == nil:
			return body, http.StatusOK, nil
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound && follow && t.placed && time.Now().Before(deadline):
			// Its Start is on its way to the stub: wait for it.
		case errors.As(err, &apiErr):
			return nil, apiErr.Status, errors.New(apiErr.Message) // it names the attempt and machine
		default:
			return nil, http.StatusBadGateway, fmt.Errorf("the stub of %s, which ran attempt %d, did not answer: %w", t.machine, t.ref.Attempt, err)
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-s.ctx.Done():
			return nil, http.StatusServiceUnavailable, errors.New("server shutting down")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTarget finds the current attempt of instance of job id (or its last
// one, when none runs) and the address of its machine's stub.
func (s *Server) logTarget(id uint64, instance int) (logTarget, int, error) {
	var (
		t      logTarget
		status int
		err    error
	)
	s.fsm.Read(func(v fsm.View) {
		j, ok := v.Job(id)
		if !ok {
			status, err = http.StatusNotFound, errNoJob(strconv.FormatUint(id, 10))
			return
		}
		if instance >= len(j.Instances) {
			status, err = http.StatusNotFound, fmt.Errorf("job %d has no instance %d (it has %d, numbered from 0)", id, instance, len(j.Instances))
			return
		}
		in := &j.Instances[instance]
		t.ref = client.AttemptRef{JobID: id, Instance: instance}
		switch {
		case in.Machine != "":
			t.ref.Attempt, t.machine = in.Attempt, in.Machine
			t.placed = in.State == fsm.InstancePlaced
		case len(in.History) > 0:
			last := in.History[len(in.History)-1]
			t.ref.Attempt, t.machine = last.Attempt, last.Machine
		default:
			status, err = http.StatusConflict, fmt.Errorf("instance %d of job %d %w (%s): it has no output", instance, id, errNotStarted, in.State)
			return
		}
		m, ok := v.Machine(t.machine)
		if !ok || m.Addr == "" {
			status, err = http.StatusBadGateway, fmt.Errorf("attempt %d ran on %s, which is no longer in the pool: its output cannot be read", t.ref.Attempt, t.machine)
			return
		}
		t.addr = m.Addr
	})
	return t, status, err
}
