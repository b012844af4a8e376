package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleSubmitBatch creates the jobs of a SubmitBatchRequest (netexec
// --batch). Every job is checked as a single submit checks it before any
// is created, so one refused job refuses the batch, the error naming it
// "job N" by its place in the request. The jobs that need nothing of
// their own then go in one Submits entry, shared with no other request;
// a cron job, one with a working directory or with dependencies goes in
// its own entry type, in order. None takes the single submit's placing
// shortcut (SubmitPlace): planned against the same state, the batch's
// jobs would be placed on the same free slots; the scheduler's next pass
// places them all together.
func (s *Server) handleSubmitBatch(w http.ResponseWriter, r *http.Request) {
	var req client.SubmitBatchRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read batch submit request: %w", err))
		return
	}
	switch n := len(req.Jobs); {
	case n == 0:
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("submit batch: no jobs"))
		return
	case n > client.MaxBatchJobs:
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("submit batch: %d jobs, at most %d in one batch", n, client.MaxBatchJobs))
		return
	}
	at := time.Now().UTC()
	cmds := make([]command, len(req.Jobs))
	unrunnable := make([]string, len(req.Jobs))
	for i, jr := range req.Jobs {
		c, status, err := s.submitFromRequest(r, jr, at)
		if err != nil {
			s.writeError(w, status, fmt.Errorf("submit batch: job %d: %w", i+1, err))
			return
		}
		cmds[i], unrunnable[i] = s.planSubmit(c, false)
		if unrunnable[i] != "" && jr.NoQueue {
			s.writeError(w, http.StatusConflict, fmt.Errorf("submit batch: job %d: %w: %s; not queued (no_queue)", i+1, errUnrunnable, unrunnable[i]))
			return
		}
	}
	if !s.mayRunAs(w, r) {
		return
	}
	ids, err := s.commitBatch(cmds)
	if err != nil {
		if ae, ok := err.(*batchApplyError); ok {
			s.writeError(w, statusOf(ae.err), fmt.Errorf("submit batch: job %d: %w", ae.job, ae.err))
			return
		}
		s.writeApplyError(w, err)
		return
	}
	resp := client.SubmitBatchResponse{Jobs: make([]client.SubmitResponse, len(ids))}
	for i, id := range ids {
		resp.Jobs[i] = s.submitResponse(id, unrunnable[i])
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// batchApplyError is a job of a batch the state machine refused, job
// counting from 1.
type batchApplyError struct {
	job int
	err error
}

func (e *batchApplyError) Error() string { return fmt.Sprintf("job %d: %v", e.job, e.err) }
func (e *batchApplyError) Unwrap() error { return e.err }

// commitBatch commits cmds in order: the plain Submits together in one
// Submits entry, each other command in its own. It returns the job ids in
// the order of cmds, or the first error: a *batchApplyError for a job the
// state machine refused, else apply's error (the jobs before it may have
// been created; a retry with the same idempotency keys finds them).
func (s *Server) commitBatch(cmds []command) ([]uint64, error) {
	ids := make([]uint64, len(cmds))
	var plain []fsm.Submit
	var at []int // the index in cmds of each of plain
	for i, c := range cmds {
		if c.t == fsm.SubmitType {
			plain = append(plain, c.body.(fsm.Submit))
			at = append(at, i)
		}
	}
	if len(plain) > 0 {
		results, err := s.submits.commit(plain, s.proposeSubmits)
		if err != nil {
			return nil, err
		}
		for k, res := range results {
			if res.Err != nil {
				return nil, &batchApplyError{at[k] + 1, res.Err}
			}
			ids[at[k]] = res.JobID
		}
	}
	for i, c := range cmds {
		if c.t == fsm.SubmitType {
			continue
		}
		res, err := s.apply(c.t, c.body)
		if err != nil {
			return nil, err
		}
		if res.Err != nil {
			return nil, &batchApplyError{i + 1, res.Err}
		}
		ids[i] = res.JobID
	}
	return ids, nil
}
