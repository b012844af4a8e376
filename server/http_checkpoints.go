package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleKeepCheckpoint commits a stub's CheckpointKept (POST
// /v1/checkpoints): an attempt of its machine exited with its job's
// checkpoint code and the checkpoint archive is kept by a majority. The
// checkpoint counts against the job owner's blob quota (the instance's
// previous one, which it replaces, does not any more): one past it is
// refused with 413, and the attempt's end is then an ordinary failure.
func (s *Server) handleKeepCheckpoint(w http.ResponseWriter, r *http.Request) {
	var req client.KeepCheckpointRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read checkpoint: %w", err))
		return
	}
	if _, ok := s.requireStub(w, r, req.Machine); !ok {
		return
	}
	if !s.groupApplies(fsm.CheckpointKeptType) {
		s.writeError(w, http.StatusConflict, fmt.Errorf("keep checkpoint: %w", errUpgradeFirst))
		return
	}
	if req.Blob == "" {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("keep checkpoint of %d.%d.%d: no blob named", req.JobID, req.Instance, req.Attempt))
		return
	}
	if !s.blobs.Has(req.Blob) {
		if _, err := s.blob(r.Context(), req.Blob); err != nil {
			s.writeError(w, http.StatusConflict, fmt.Errorf("keep checkpoint of %d.%d.%d: %w", req.JobID, req.Instance, req.Attempt, err))
			return
		}
	}
	if err := s.checkCheckpointQuota(req); err != nil {
		s.writeError(w, http.StatusRequestEntityTooLarge, err)
		return
	}
	// The leader's time: the checkpoint's commit, as history shows it.
	at := time.Now().UTC()
	res, err := s.apply(fsm.CheckpointKeptType, fsm.CheckpointKept{At: at, JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt,
		Machine: req.Machine, Blob: req.Blob, Size: req.Size, Files: req.Files})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), fmt.Errorf("keep checkpoint: %w", res.Err))
		return
	}
	if res.Stale {
		s.writeError(w, http.StatusGone, fmt.Errorf("keep checkpoint of %d.%d.%d: the attempt is no longer current", req.JobID, req.Instance, req.Attempt))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkCheckpointQuota refuses a checkpoint that would keep its job's
// owner past the per-user blob quota, the instance's previous checkpoint
// left out of the count (the new one replaces it).
func (s *Server) checkCheckpointQuota(req client.KeepCheckpointRequest) error {
	if s.limits.quota <= 0 {
		return nil
	}
	var owner string
	var named map[string]int64
	s.fsm.Read(func(v fsm.View) {
		j, in, ok := v.Instance(fsm.InstanceRef{JobID: req.JobID, Instance: req.Instance})
		if !ok {
			return
		}
		owner, named = j.Owner, v.UserBlobs(j.Owner)
		if c := in.Checkpoint; c != nil && c.Blob != req.Blob {
			delete(named, c.Blob)
		}
	})
	if owner == "" {
		return nil // no such instance: the entry says so
	}
	used, counted := s.limits.uploads.usage(owner, named, req.Blob, time.Now())
	if counted || used+req.Size <= s.limits.quota {
		return nil
	}
	return s.quotaError("keep checkpoint", owner, used, req.Size)
}
