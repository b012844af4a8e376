package server

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/blobstore"
)

// validateFiles checks a spec's copy_in and copy_out: copy_in names the
// files an archive already kept holds (netexec uploads it first), and
// copy_out names paths inside the exec dir.
func validateFiles(s *client.JobSpec) error {
	switch {
	case len(s.CopyIn) > 0 && s.CopyInBlob == "":
		return errors.New("copy_in: the files were not sent: netexec sends them (PUT /v1/blobs/SHA256, then copy_in_blob in the spec)")
	case s.CopyInBlob != "" && !files.ValidSum(s.CopyInBlob):
		return fmt.Errorf("copy_in_blob %q: %w", s.CopyInBlob, blobstore.ErrBadName)
	case s.CopyInSize < 0:
		return fmt.Errorf("copy_in_size %d: must not be negative", s.CopyInSize)
	}
	for _, p := range s.CopyOut {
		c := filepath.Clean(p)
		if p == "" || filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
			return fmt.Errorf("copy_out %q: a path (globs allowed) inside the exec dir, relative to it", p)
		}
		if _, err := filepath.Match(c, ""); err != nil {
			return fmt.Errorf("copy_out %q: %w", p, err)
		}
	}
	return validateCheckpoint(s)
}

// validateCheckpoint checks a spec's checkpoint options: paths inside the
// exec dir, and an exit code from 1 to 255, both or neither.
func validateCheckpoint(s *client.JobSpec) error {
	if len(s.Checkpoint) == 0 && s.CheckpointExit == 0 {
		return nil
	}
	if len(s.Checkpoint) == 0 {
		return errors.New("checkpoint_exit needs checkpoint paths (netexec --checkpoint PATH,...)")
	}
	if s.CheckpointExit < 1 || s.CheckpointExit > 255 {
		return fmt.Errorf("checkpoint_exit %d: an exit code from 1 to 255 (netexec --checkpoint-exit CODE)", s.CheckpointExit)
	}
	for _, p := range s.Checkpoint {
		c := filepath.Clean(p)
		if p == "" || filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
			return fmt.Errorf("checkpoint %q: a path inside the exec dir, relative to it", p)
		}
		if _, err := filepath.Match(c, ""); err != nil {
			return fmt.Errorf("checkpoint %q: %w", p, err)
		}
	}
	return nil
}

// checkCopyIn refuses a job whose copy_in archive passes the size limit
// or that no server keeps, and checks (fetching it from a peer when
// needed) that this server, the leader, has it. The size is the archive's
// as kept, whatever the spec says.
func (s *Server) checkCopyIn(r *http.Request, spec *fsm.JobSpec) (int, error) {
	limit := s.maxCopySize()
	if spec.CopyInSize > limit {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("copy_in: %w: the files come to %s, this pool's limit per job is %s (the servers' --max-copy-size)",
			files.ErrTooLarge, files.Size(spec.CopyInSize), files.Size(limit))
	}
	data, err := s.blob(r.Context(), spec.CopyInBlob)
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("copy_in: the files were not kept before the submit (send them again): %w", err)
	}
	if n := int64(len(data)); n > limit {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("copy_in: %w: the files come to %s, this pool's limit per job is %s (the servers' --max-copy-size)",
			files.ErrTooLarge, files.Size(n), files.Size(limit))
	}
	spec.CopyInSize = int64(len(data))
	return 0, nil
}
