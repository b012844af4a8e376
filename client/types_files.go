package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/netmgr/netmgr/client/files"
)

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

// PutBlob sends data to a server of the group (PUT /v1/blobs/{sum}),
// which answers once a majority of the servers keep it.
func (c *Client) PutBlob(ctx context.Context, data []byte) (BlobResponse, error) {
	var out BlobResponse
	sum := files.Sum(data)
	err := c.doBody(ctx, "PUT", "/v1/blobs/"+sum, data, &out)
	return out, err
}

// Blob reads the blob named sum from a server (GET /v1/blobs/{sum}) and
// checks it against its name.
func (c *Client) Blob(ctx context.Context, sum string) ([]byte, error) {
	body, err := c.stream(ctx, "/v1/blobs/"+url.PathEscape(sum))
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, body); err != nil {
		return nil, fmt.Errorf("read blob %.12s: %w", sum, err)
	}
	if err := files.Verify(sum, buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// KeepOutputs commits a stub's record of an attempt's kept copy_out
// (POST /v1/outputs).
func (c *Client) KeepOutputs(ctx context.Context, req KeepOutputsRequest) error {
	return c.do(ctx, "POST", "/v1/outputs", req, nil)
}
