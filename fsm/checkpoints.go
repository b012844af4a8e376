package fsm

import (
	"fmt"
	"strings"
	"time"
)

// CheckpointKept records that an attempt exited with its job's
// checkpoint code (JobSpec.CheckpointExit) and that the files its
// checkpoint paths name are kept in the servers' blob stores, by a
// majority of them, as the tar archive whose sha256 is Blob. Since
// command level 42. The stub commits it before it reports the attempt's
// end; the end (ChildTerm) then queues the instance again at once,
// uncounted (checkpointRestart), and every later attempt of the
// instance starts with the newest kept checkpoint in its exec dir.
type CheckpointKept struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	// Blob is the archive's sha256 (hex), Size its size in bytes.
	Blob string `json:"blob"`
	Size int64  `json:"size"`
	// Files are the paths the archive holds, relative to the exec dir.
	Files []string `json:"files,omitempty"`
}

// Checkpoint is the newest kept checkpoint of an instance: the attempt
// that made it, on which machine, the archive (Blob, Size, Files) and
// when its CheckpointKept was committed (At, the leader's time, and
// Index). Since snapshot version 15.
type Checkpoint struct {
	Attempt uint64    `json:"attempt"`
	Machine string    `json:"machine,omitempty"`
	Blob    string    `json:"blob"`
	Size    int64     `json:"size"`
	Files   []string  `json:"files,omitempty"`
	At      time.Time `json:"at"`
	Index   uint64    `json:"index"`
}

// EventCheckpointKept is the event of a kept checkpoint.
const EventCheckpointKept = "checkpoint-kept"

// HasCheckpoint reports whether the job checkpoints (--checkpoint and
// --checkpoint-exit), which only command level 42 records.
func (s *JobSpec) HasCheckpoint() bool {
	return len(s.Checkpoint) > 0 || s.CheckpointExit != 0
}

// checkCheckpoint checks the checkpoint options: both or neither, an
// exit code from 1 to 255 (0 is success), and relative paths.
func (s *JobSpec) checkCheckpoint() error {
	if !s.HasCheckpoint() {
		return nil
	}
	if len(s.Checkpoint) == 0 || s.CheckpointExit < 1 || s.CheckpointExit > 255 {
		return fmt.Errorf("%w: checkpoint: needs its paths and an exit code from 1 to 255 (got %d paths, code %d)", ErrInvalidSpec, len(s.Checkpoint), s.CheckpointExit)
	}
	for _, p := range s.Checkpoint {
		if p == "" || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("%w: checkpoint: %q is not a path inside the exec dir", ErrInvalidSpec, p)
		}
	}
	return nil
}

// applyCheckpointKept makes c the instance's newest checkpoint. Only the
// current attempt, on its machine, may keep one (an earlier attempt's is
// fenced as stale): the instance's later attempts start from it, and
// the checkpoint it replaces is no longer referred to, so the blob
// stores remove it (View.Blobs). A repeat of the same attempt's replaces
// itself, as a restarted stub sends it again.
func (d *db) applyCheckpointKept(index uint64, c *CheckpointKept) *Result {
	j, ok := d.jobs[c.JobID]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("checkpoint of job %d: %w", c.JobID, ErrNoSuchJob)}
	}
	if !j.Spec.HasCheckpoint() || c.Blob == "" {
		return &Result{Index: index, JobID: j.ID, Err: fmt.Errorf("checkpoint of job %d: %w: the job keeps no checkpoint", c.JobID, ErrInvalidSpec)}
	}
	_, in, res := d.current(index, c.JobID, c.Instance, c.Attempt, c.Machine)
	if res != nil {
		d.fenced(index, c.At, res, c.JobID, c.Instance, c.Attempt, c.Machine, "checkpoint")
		res.JobID = j.ID
		return res
	}
	if in.Finished() {
		return &Result{Index: index, JobID: j.ID, Stale: true}
	}
	in.Checkpoint = &Checkpoint{Attempt: c.Attempt, Machine: c.Machine, Blob: c.Blob, Size: c.Size,
		Files: append([]string(nil), c.Files...), At: c.At, Index: index}
	in.ModifyIndex = index
	j.ModifyIndex = index
	d.event(index, c.At, EventCheckpointKept, j.ID, in.Index, in.Attempt, c.Machine, fmt.Sprintf("%d bytes, %d files", c.Size, len(c.Files)))
	return &Result{Index: index, JobID: j.ID}
}

// checkpointRestart reports whether the end c of the current attempt of
// in is a checkpoint exit: the job's checkpoint code, no signal, and a
// checkpoint of this very attempt kept. Such an end queues the instance
// again at once, whatever the restart policy, and counts no restart.
func checkpointRestart(s *JobSpec, in *Instance, c *ChildTerm) bool {
	return s.CheckpointExit != 0 && c.Signal == "" && c.Error == "" && c.ExitCode == s.CheckpointExit &&
		in.Checkpoint != nil && in.Checkpoint.Attempt == in.Attempt
}
