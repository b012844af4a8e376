package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	cmd, status, err := s.submitFromRequest(r, req, time.Now().UTC())
	if err != nil {
		s.writeError(w, status, fmt.Errorf("submit: %w", err))
		return
	}
	if !s.mayRunAs(w, r) {
		return
	}
	planned := time.Now()
	sc, unrunnable := s.planSubmit(cmd, true)
	if unrunnable != "" && req.NoQueue {
		s.writeError(w, http.StatusConflict, fmt.Errorf("submit: %w: %s; not queued (no_queue)", errUnrunnable, unrunnable))
		return
	}
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
	s.writeJSON(w, http.StatusOK, s.submitResponse(res.JobID, unrunnable))
}

// submitFromRequest checks a submit request and returns the Submit
// command it asks for, stamped at, or the HTTP status and the error that
// refuse it (the caller says "submit"); the caller checks mayRunAs.
func (s *Server) submitFromRequest(r *http.Request, req client.SubmitRequest, at time.Time) (fsm.Submit, int, error) {
	if err := validateSpec(&req.Spec); err != nil {
		return fsm.Submit{}, http.StatusBadRequest, err
	}
	cmd := fsm.Submit{
		At:             at,
		Owner:          requestUser(r),
		IdempotencyKey: req.IdempotencyKey,
		Spec:           specFromWire(req.Spec),
	}
	var err error
	s.fsm.Read(func(v fsm.View) {
		routeInteractive(v, &cmd.Spec)
		err = resolveDependencies(v, req.Spec, &cmd.Spec)
	})
	if err != nil {
		return cmd, statusOf(err), err
	}
	if status, err := s.admitSite(&cmd); err != nil {
		return cmd, status, err
	}
	for _, f := range cmd.Spec.Features() {
		if !s.groupSupports(f) {
			return cmd, http.StatusConflict, fmt.Errorf("%s: %w", f.Name, errUpgradeFirst)
		}
	}
	if cmd.Spec.CopyInBlob != "" {
		if status, err := s.checkCopyIn(r, &cmd.Spec); err != nil {
			return cmd, status, err
		}
		if status, err := s.checkSubmitQuota(cmd.Owner, &cmd.Spec); err != nil {
			return cmd, status, err
		}
	}
	return cmd, 0, nil
}

// submitResponse answers for the job id created, unrunnable saying why
// it waits for a machine.
func (s *Server) submitResponse(id uint64, unrunnable string) client.SubmitResponse {
	var resp client.SubmitResponse
	s.fsm.Read(func(v fsm.View) {
		if j, ok := v.Job(id); ok {
			resp = client.SubmitResponse{ID: j.ID, Name: j.Name, Owner: j.Owner, Unrunnable: unrunnable}
		}
	})
	return resp
}

func (s *Server) handleJobs(w http.ResponseWriter, r *http.Request) {
	f, err := parseJobFilter(r.URL.Query())
	if err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	var jobs []client.Job
	var total int
	s.fsm.Read(func(v fsm.View) {
		all := v.Jobs()
		if !f.any() {
			jobs = make([]client.Job, 0, len(all))
			for _, j := range all {
				jobs = append(jobs, jobToWire(v, j))
			}
			total = len(jobs)
			return
		}
		jobs, total = f.page(v, all)
	})
	w.Header().Set(client.TotalCountHeader, strconv.Itoa(total))
	s.writeJSON(w, http.StatusOK, jobs)
}

// errNoJob names the job reference that matched nothing.
func errNoJob(ref string) error {
	return fmt.Errorf("job %q: %w", ref, fsm.ErrNoSuchJob)
}

// errJobExpired says that job id finished and left the database after the
// retention; it still wraps fsm.ErrNoSuchJob (404).
func errJobExpired(id uint64) error {
	return fmt.Errorf("job %d finished and was removed after the job retention (the servers' --job-retention): %w", id, fsm.ErrNoSuchJob)
}

// lookupJob resolves a job reference: a numeric id, or a name. A name
// means its one live job (queued, held or running), or, when none is
// live, its most recent job; a name with several live jobs is ambiguous
// (errAmbiguousName, listing them) and must be given as an id. It
// returns errNoJob when nothing matches.
func lookupJob(v fsm.View, ref string) (*fsm.Job, error) {
	if id, err := strconv.ParseUint(ref, 10, 64); err == nil {
		if j, ok := v.Job(id); ok {
			return j, nil
		}
	}
	named := v.JobsNamed(ref)
	if len(named) == 0 {
		if id, err := strconv.ParseUint(ref, 10, 64); err == nil && v.JobExpired(id) {
			return nil, errJobExpired(id)
		}
		return nil, errNoJob(ref)
	}
	var live []*fsm.Job
	for _, j := range named {
		if jobLive(j) {
			live = append(live, j)
		}
	}
	switch len(live) {
	case 0:
		return named[len(named)-1], nil
	case 1:
		return live[0], nil
	}
	ids := make([]string, len(live))
	for i, j := range live {
		ids[i] = fmt.Sprintf("%d (%s.%s, %s)", j.ID, j.Name, j.Owner, j.State())
	}
	return nil, fmt.Errorf("job %q: %w: %d live jobs have that name: %s; name one by id",
		ref, errAmbiguousName, len(live), strings.Join(ids, ", "))
}

// jobLive reports whether j has not ended: queued, held or running.
func jobLive(j *fsm.Job) bool {
	switch j.State() {
	case fsm.JobQueued, fsm.JobHeld, fsm.JobRunning:
		return true
	}
	return false
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
		var (
			ready     bool
			lookupErr error
		)
		// Every commit wakes every waiter; only one whose job changed
		// looks at it again, and renders it once it is ready.
		s.fsm.Read(func(v fsm.View) {
			var j *fsm.Job
			if j, lookupErr = lookupJob(v, ref); lookupErr == nil && jobVersion(j) != version {
				version = jobVersion(j)
				if ready = until == "" || jobReached(j, until); ready {
					job = jobToWire(v, j)
					addHistory(&job, j)
				}
			}
		})
		if lookupErr != nil {
			s.writeError(w, statusOf(lookupErr), lookupErr)
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
				if j, err := lookupJob(v, ref); err == nil {
					job = jobToWire(v, j)
					addHistory(&job, j)
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
	res, err := s.apply(fsm.KillType, fsm.Kill{At: time.Now().UTC(), JobID: id, By: requestUser(r), Signal: req.Signal, Runs: req.Runs})
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
