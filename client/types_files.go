package client

import "time"

// Output is the kept copy_out of one instance of a job (its latest
// attempt's): the archive Blob (sha256) of Size bytes holds Files; Lost
// says what was asked for and not kept, and why.
type Output struct {
	Instance int      `json:"instance"`
	Attempt  uint64   `json:"attempt"`
	Machine  string   `json:"machine,omitempty"`
	Blob     string   `json:"blob,omitempty"`
	Size     int64    `json:"size,omitempty"`
	Files    []string `json:"files,omitempty"`
	Lost     []string `json:"lost,omitempty"`
}

// BlobResponse answers PUT /v1/blobs: the blob is kept by Holders of the
// Servers servers, a majority.
type BlobResponse struct {
	Sum     string `json:"sum"`
	Size    int64  `json:"size"`
	Holders int    `json:"holders"`
	Servers int    `json:"servers"`
}

// KeepOutputsRequest is what a stub sends (POST /v1/outputs) once an
// attempt's copy_out archive is kept by a majority of the servers: the
// servers commit it with the job (OutputsKept).
type KeepOutputsRequest struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	Blob     string    `json:"blob,omitempty"`
	Size     int64     `json:"size,omitempty"`
	Files    []string  `json:"files,omitempty"`
	Lost     []string  `json:"lost,omitempty"`
}

// BlobHeaderSum names, on PUT /v1/blobs and between servers, the sha256
// the sender computed, which the receiver checks.
const BlobHeaderSum = "X-Netmgr-Blob-Sha256"

// Checkpoint is a kept checkpoint of an instance: the attempt that made
// it, on Machine, the archive Blob (sha256) of Size bytes holding Files,
// and when the servers committed it.
type Checkpoint struct {
	Attempt uint64    `json:"attempt"`
	Machine string    `json:"machine,omitempty"`
	Blob    string    `json:"blob"`
	Size    int64     `json:"size"`
	Files   []string  `json:"files,omitempty"`
	At      time.Time `json:"at"`
}

// KeepCheckpointRequest is what a stub sends (POST /v1/checkpoints) once
// an attempt that exited with its job's checkpoint code has its
// checkpoint archive kept by a majority of the servers: the servers
// commit it as the instance's newest checkpoint (CheckpointKept).
type KeepCheckpointRequest struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	Blob     string    `json:"blob"`
	Size     int64     `json:"size"`
	Files    []string  `json:"files,omitempty"`
}
