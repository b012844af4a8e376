package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/blobstore"
)

// The blob endpoints (blobs.go). PUT /v1/blobs/{sum} takes a user's
// copy_in archive or a stub's copy_out and answers once a majority keep
// it; any server takes it (no leader needed). GET /v1/blobs/{sum} gives a
// blob to a user who may act on a job naming it, or to the stub of a
// machine an instance of the job whose copy_in it is was placed on; a
// follower that would refuse sends the caller to the leader, whose state
// is not behind.
// PUT and GET /v1/peer/blobs/{sum} are for the servers alone.

func (s *Server) handlePutBlob(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	if p.User == "" && p.Stub == "" && !p.Insecure {
		s.deny(w, r, p, &denial{http.StatusForbidden, denyWrongRole,
			fmt.Errorf("PUT /v1/blobs is for users and stubs: %s is neither (%w)", p, errPermission)})
		return
	}
	sum := r.PathValue("sum")
	if !files.ValidSum(sum) {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("keep files: %q: %w", sum, blobstore.ErrBadName))
		return
	}
	if !s.checkUploadQuota(w, r, p, sum) {
		return
	}
	data, ok := s.readBlobBody(w, r)
	if !ok || !s.reserveUpload(w, r, p, sum, int64(len(data))) {
		return
	}
	resp, err := s.replicateBlob(r.Context(), sum, data)
	if err != nil && p.User != "" {
		s.limits.uploads.forget(p.User, sum)
	}
	switch {
	case errors.Is(err, errBlobQuorum):
		s.writeError(w, http.StatusServiceUnavailable, err)
	case err != nil:
		s.writeError(w, http.StatusBadRequest, err)
	default:
		s.log.Debug("files kept", "blob", sum, "size", len(data), "by", p.String(), "holders", resp.Holders)
		s.writeJSON(w, http.StatusOK, resp)
	}
}

// readBlobBody reads a blob's body up to the copy size limit, answering
// 413 with the limit when it is larger.
func (s *Server) readBlobBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := s.maxCopySize()
	data, err := readSized(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("keep files: %w: the files come to more than %s, this pool's limit per job (the servers' --max-copy-size)", files.ErrTooLarge, files.Size(limit)))
		return nil, false
	case err != nil:
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("keep files: read: %w", err))
		return nil, false
	}
	return data, true
}

// readSized reads all of body into one buffer of the length its sender
// declared (at most limit; net/http ends such a body there), not grown
// by doubling from 512 bytes: a 100 MiB checkpoint read with io.ReadAll
// copies about twice its size and leaves the collector that much more.
func readSized(body io.Reader, declared, limit int64) ([]byte, error) {
	if declared <= 0 || declared > limit {
		return io.ReadAll(body)
	}
	data := make([]byte, declared)
	n, err := io.ReadFull(body, data)
	return data[:n], err
}

func (s *Server) handlePeerPutBlob(w http.ResponseWriter, r *http.Request) {
	if !s.requireServer(w, r) {
		return
	}
	data, ok := s.readBlobBody(w, r)
	if !ok {
		return
	}
	if err := s.blobs.Put(r.PathValue("sum"), data); err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handlePeerGetBlob(w http.ResponseWriter, r *http.Request) {
	if !s.requireServer(w, r) {
		return
	}
	data, err := s.blobs.Get(r.PathValue("sum"))
	if err != nil {
		s.writeError(w, blobStatus(err), err)
		return
	}
	writeBlob(w, data)
}

func (s *Server) handleGetBlob(w http.ResponseWriter, r *http.Request) {
	sum := r.PathValue("sum")
	p := principalOf(r)
	if !p.Insecure && p.Server == "" && !s.mayReadBlob(p, sum) {
		if s.raft.State() != raft.Leader && r.Header.Get(forwardedHeader) == "" {
			// This server's state may lag behind the job's placement or
			// end: the leader decides.
			if _, addr, err := s.leaderHTTP(); err == nil {
				u := *r.URL
				u.Scheme, u.Host = strings.TrimSuffix(s.scheme(), "://"), addr
				http.Redirect(w, r, u.String(), http.StatusTemporaryRedirect)
				return
			}
		}
		who := "no job of yours names them (only a job's owner or an admin_id may read its files)"
		if p.Stub != "" {
			who = "no job placed on machine " + p.Stub + " names them"
		}
		s.deny(w, r, p, &denial{http.StatusForbidden, denyNotPermitted,
			fmt.Errorf("files %.12s: %w: %s, and you are %s", sum, errPermission, who, p)})
		return
	}
	data, err := s.blob(r.Context(), sum)
	if err != nil {
		s.writeError(w, blobStatus(err), err)
		return
	}
	writeBlob(w, data)
}

// mayReadBlob reports whether p may read the blob sum: a user, when a job
// they may act on names it; a stub, when it is the copy_in of a job with
// an instance placed or running on its machine.
func (s *Server) mayReadBlob(p principal, sum string) bool {
	allowed := false
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		for _, j := range v.Jobs() {
			switch {
			case p.User != "":
				if !mayActFor(db, j.Owner, p) {
					continue
				}
				if j.Spec.CopyInBlob == sum {
					allowed = true
					return
				}
				for _, o := range j.Outputs {
					if o.Blob == sum {
						allowed = true
						return
					}
				}
			case p.Stub != "" && j.Spec.CopyInBlob == sum:
				for _, in := range j.Instances {
					if in.Machine == p.Stub {
						allowed = true
						return
					}
				}
			case p.Stub != "":
				// An instance's checkpoint, for the machine it is placed
				// on, to restore it.
				for _, in := range j.Instances {
					if in.Machine == p.Stub && in.Checkpoint != nil && in.Checkpoint.Blob == sum {
						allowed = true
						return
					}
				}
			}
		}
	})
	return allowed
}

// blobStatus is the HTTP status of a blob store error.
func blobStatus(err error) int {
	switch {
	case errors.Is(err, blobstore.ErrBadName):
		return http.StatusBadRequest
	case errors.Is(err, blobstore.ErrNotFound):
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

func writeBlob(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// requireServer answers 403 unless a server made the request on its own
// behalf (any caller in the insecure mode).
func (s *Server) requireServer(w http.ResponseWriter, r *http.Request) bool {
	p := principalOf(r)
	if p.Insecure || p.Server != "" {
		return true
	}
	s.deny(w, r, p, &denial{http.StatusForbidden, denyWrongRole,
		fmt.Errorf("%s %s is for servers: %s holds no server certificate (%w)", r.Method, r.URL.Path, p, errPermission)})
	return false
}

// handleKeepOutputs commits a stub's OutputsKept (POST /v1/outputs): the
// copy_out of an attempt of its machine, whose archive a majority keep.
func (s *Server) handleKeepOutputs(w http.ResponseWriter, r *http.Request) {
	var req client.KeepOutputsRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read outputs: %w", err))
		return
	}
	if _, ok := s.requireStub(w, r, req.Machine); !ok {
		return
	}
	if !s.groupApplies(fsm.OutputsKeptType) {
		s.writeError(w, http.StatusConflict, fmt.Errorf("keep outputs: %w", errUpgradeFirst))
		return
	}
	if req.Blob != "" && !s.blobs.Has(req.Blob) {
		if _, err := s.blob(r.Context(), req.Blob); err != nil {
			s.writeError(w, http.StatusConflict, fmt.Errorf("keep outputs of %d.%d.%d: %w", req.JobID, req.Instance, req.Attempt, err))
			return
		}
	}
	at := req.At
	if at.IsZero() {
		at = time.Now().UTC()
	}
	res, err := s.apply(fsm.OutputsKeptType, fsm.OutputsKept{At: at, JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt,
		Machine: req.Machine, Blob: req.Blob, Size: req.Size, Files: req.Files, Lost: req.Lost})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), fmt.Errorf("keep outputs: %w", res.Err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
