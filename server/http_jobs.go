package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var req client.SubmitRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read submit request: %w", err))
		return
	}
	if err := validateSpec(&req.Spec); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("submit: %w", err))
		return
	}
	if !s.mayRunAs(w, r) {
		return
	}
	cmd := fsm.Submit{
		At:             time.Now().UTC(),
		Owner:          requestUser(r),
		IdempotencyKey: req.IdempotencyKey,
		Spec:           specFromWire(req.Spec),
	}
	var err error
	s.fsm.Read(func(v fsm.View) { err = resolveDependencies(v, req.Spec, &cmd.Spec) })
	if err != nil {
		s.writeError(w, statusOf(err), fmt.Errorf("submit: %w", err))
		return
	}
	if cmd.Spec.HasDependencies() {
		if !s.groupAppliesNow(fsm.SubmitAfterType) {
			s.writeError(w, http.StatusConflict, fmt.Errorf("submit a dependent job: %w", errUpgradeFirst))
			return
		}
	}
	if cmd.Spec.Mail != "" && !s.groupAppliesNow(fsm.MailSentType) {
		s.writeError(w, http.StatusConflict, fmt.Errorf("submit a job with mail: %w", errUpgradeFirst))
		return
	}
	planned := time.Now()
	sc := s.submitCommand(cmd)
	res, err := s.applySubmit(sc)
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if sc.t == fsm.SubmitPlaceType {
		s.metrics.schedulePass(planned, len(res.Accepted)) // a pass for one job
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), fmt.Errorf("submit: %w", res.Err))
		return
	}
	var resp client.SubmitResponse
	s.fsm.Read(func(v fsm.View) {
		if j, ok := v.Job(res.JobID); ok {
			resp = client.SubmitResponse{ID: j.ID, Name: j.Name, Owner: j.Owner}
		}
	})
	s.writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) {
	var jobs []client.Job
	s.fsm.Read(func(v fsm.View) {
		all := v.Jobs()
		jobs = make([]client.Job, 0, len(all))
		for _, j := range all {
			jobs = append(jobs, jobToWire(v, j))
		}
	})
	s.writeJSON(w, http.StatusOK, jobs)
}

// errNoJob names the job reference that matched nothing.
func errNoJob(ref string) error {
	return fmt.Errorf("job %q: %w", ref, fsm.ErrNoSuchJob)
}

// lookupJob resolves a job reference: a numeric id, or the most recent job
// with that name.
func lookupJob(v fsm.View, ref string) (*fsm.Job, bool) {
	if id, err := strconv.ParseUint(ref, 10, 64); err == nil {
		if j, ok := v.Job(id); ok {
			return j, true
		}
	}
	return v.JobByName(ref)
}

// handleJob answers one job. With ?wait=started|done it long-polls until
// the job reaches that point or ?timeout (default 30 s, at most 60 s)
// passes, then answers the job as it stands.
func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	q := r.URL.Query()
	until := q.Get("wait")
	if until != "" && until != client.WaitStarted && until != client.WaitDone {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("wait=%q: want %q or %q", until, client.WaitStarted, client.WaitDone))
		return
	}
	timeout := 30 * time.Second
	if t := q.Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			s.writeError(w, http.StatusBadRequest, fmt.Errorf("timeout=%q: not a positive duration", t))
			return
		}
		timeout = min(d, 60*time.Second)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var (
		job     client.Job
		version uint64 // the job's ModifyIndex when it was last looked at
	)
	for {
		_, changed := s.fsm.Watch()
		var found, ready bool
		// Every commit wakes every waiter; only one whose job changed
		// looks at it again, and renders it once it is ready.
		s.fsm.Read(func(v fsm.View) {
			var j *fsm.Job
			if j, found = lookupJob(v, ref); found && jobVersion(j) != version {
				version = jobVersion(j)
				if ready = until == "" || jobReached(j, until); ready {
					job = jobToWire(v, j)
				}
			}
		})
		if !found {
			s.writeError(w, http.StatusNotFound, errNoJob(ref))
			return
		}
		if ready {
			s.writeJSON(w, http.StatusOK, job)
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			s.fsm.Read(func(v fsm.View) {
				if j, ok := lookupJob(v, ref); ok {
					job = jobToWire(v, j)
				}
			})
			s.writeJSON(w, http.StatusOK, job)
			return
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			s.writeError(w, http.StatusServiceUnavailable, errors.New("server shutting down"))
			return
		}
	}
}

// jobReached reports whether j satisfies the wait condition until, as
// client.JobReached does for the job rendered.
func jobReached(j *fsm.Job, until string) bool {
	for i := range j.Instances {
		if !client.InstanceReached(j.Instances[i].State, until) {
			return false
		}
	}
	return true
}

func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) {
	var req client.KillRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			s.writeError(w, http.StatusBadRequest, fmt.Errorf("read kill request: %w", err))
			return
		}
	}
	if req.Signal == "" {
		req.Signal = "TERM"
	}
	id, _, ok := s.resolveControlled(w, r, "kill")
	if !ok {
		return
	}
	res, err := s.apply(fsm.KillType, fsm.Kill{At: time.Now().UTC(), JobID: id, By: requestUser(r), Signal: req.Signal})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		status := http.StatusConflict
		if errors.Is(res.Err, fsm.ErrNoSuchJob) {
			status = http.StatusNotFound
		}
		s.writeError(w, status, res.Err)
		return
	}
	s.writeJSON(w, http.StatusOK, client.KillResponse{ID: id, Signaled: res.Signaled, Dequeued: res.Dequeued})
}

// jobVersion is the last index that changed the job or any of its
// instances: a long poll renders the job again only when it moves.
func jobVersion(j *fsm.Job) uint64 {
	v := j.ModifyIndex
	for i := range j.Instances {
		v = max(v, j.Instances[i].ModifyIndex)
	}
	return v
}
