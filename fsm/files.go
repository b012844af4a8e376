package fsm

import (
	"fmt"
	"time"
)

// OutputsKept records that the copy_out files of one attempt are kept in
// the servers' blob stores (by a majority of them) as the tar archive
// whose sha256 is Blob. Since command level 38. The stub commits it before
// it reports the attempt's end, so a job that has ended has its outputs
// kept already, and before it may remove the attempt's exec dir.
type OutputsKept struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	// Blob is the archive's sha256 (hex), "" when nothing matched; Size
	// its size in bytes.
	Blob string `json:"blob,omitempty"`
	Size int64  `json:"size,omitempty"`
	// Files are the paths the archive holds, relative to the exec dir.
	Files []string `json:"files,omitempty"`
	// Lost says what was asked for and not kept, and why ("big.dat:
	// over the copy_out limit of 64 MiB", "*.png: matched nothing").
	Lost []string `json:"lost,omitempty"`
}

// Output is the kept copy_out of one attempt of a job: OutputsKept as
// the job holds it.
type Output struct {
	Instance int      `json:"instance"`
	Attempt  uint64   `json:"attempt"`
	Machine  string   `json:"machine,omitempty"`
	Blob     string   `json:"blob,omitempty"`
	Size     int64    `json:"size,omitempty"`
	Files    []string `json:"files,omitempty"`
	Lost     []string `json:"lost,omitempty"`
}

// applyOutputsKept files c with its job: one Output per instance, the
// latest attempt's (a later attempt's outputs replace an earlier's; the
// same attempt's again replace themselves, as a restarted stub sends them
// again).
func (d *db) applyOutputsKept(index uint64, c *OutputsKept) *Result {
	j, ok := d.jobs[c.JobID]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("outputs of job %d: %w", c.JobID, ErrNoSuchJob)}
	}
	if c.Instance < 0 || c.Instance >= len(j.Instances) {
		return &Result{Index: index, JobID: j.ID, Err: fmt.Errorf("outputs of job %d instance %d: %w", c.JobID, c.Instance, ErrNoSuchJob)}
	}
	d.edit(j)
	o := Output{Instance: c.Instance, Attempt: c.Attempt, Machine: c.Machine, Blob: c.Blob, Size: c.Size,
		Files: append([]string(nil), c.Files...), Lost: append([]string(nil), c.Lost...)}
	for i := range j.Outputs {
		if j.Outputs[i].Instance != c.Instance {
			continue
		}
		if j.Outputs[i].Attempt > c.Attempt {
			return &Result{Index: index, JobID: j.ID, Stale: true} // an earlier attempt's, late
		}
		j.Outputs[i] = o
		j.ModifyIndex = index
		return &Result{Index: index, JobID: j.ID}
	}
	j.Outputs = append(j.Outputs, o)
	j.ModifyIndex = index
	return &Result{Index: index, JobID: j.ID}
}

// Blobs returns the sha256 of every blob the live state refers to: each
// job's copy_in archive, kept outputs and its instances' newest
// checkpoints (an older checkpoint is referred to no more). A blob not among them may be
// removed from a blob store once it is old enough not to be an upload
// whose Submit is still on its way.
func (v View) Blobs() map[string]bool {
	out := make(map[string]bool)
	for _, j := range v.d.jobs {
		if j.Spec.CopyInBlob != "" {
			out[j.Spec.CopyInBlob] = true
		}
		for _, o := range j.Outputs {
			if o.Blob != "" {
				out[o.Blob] = true
			}
		}
		for i := range j.Instances {
			if c := j.Instances[i].Checkpoint; c != nil {
				out[c.Blob] = true
			}
		}
	}
	return out
}

// UserBlobs returns the blobs the live jobs of owner name, each with its
// size as recorded: their copy_in archives, kept outputs and newest
// checkpoints. A blob two
// jobs name is listed once. The per-user blob quota (server) adds them up.
func (v View) UserBlobs(owner string) map[string]int64 {
	out := make(map[string]int64)
	for _, j := range v.d.jobs {
		if j.Owner != owner {
			continue
		}
		if j.Spec.CopyInBlob != "" {
			out[j.Spec.CopyInBlob] = j.Spec.CopyInSize
		}
		for _, o := range j.Outputs {
			if o.Blob != "" {
				out[o.Blob] = o.Size
			}
		}
		for i := range j.Instances {
			if c := j.Instances[i].Checkpoint; c != nil {
				out[c.Blob] = c.Size
			}
		}
	}
	return out
}
