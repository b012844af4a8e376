package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/netmgr/netmgr/client/files"
)

// The blob store's calls: copy_in archives sent before a submit, kept
// outputs read back by netmgr fetch, and a stub's record of outputs kept.

// PutBlob sends data to a server of the group (PUT /v1/blobs/{sum}),
// which answers once a majority of the servers keep it.
func (c *Client) PutBlob(ctx context.Context, data []byte) (BlobResponse, error) {
	return c.PutBlobSum(ctx, files.Sum(data), data)
}

// PutBlobSum is PutBlob for a caller that has data's sum (files.Sum)
// already, as a stub naming a checkpoint in its record does: a 100 MiB
// archive is not hashed twice. A wrong sum is refused by the server.
func (c *Client) PutBlobSum(ctx context.Context, sum string, data []byte) (BlobResponse, error) {
	var out BlobResponse
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

// KeepCheckpoint commits a stub's record of an attempt's kept checkpoint
// (POST /v1/checkpoints).
func (c *Client) KeepCheckpoint(ctx context.Context, req KeepCheckpointRequest) error {
	return c.do(ctx, "POST", "/v1/checkpoints", req, nil)
}
