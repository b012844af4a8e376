package client

import (
	"context"
	"net/http"
	"time"
)

// PolicyRequest is the body of POST /v1/admin/policy: a site policy
// script to install (Source), or Clear to remove the installed one.
type PolicyRequest struct {
	Source string `json:"source,omitempty"`
	Clear  bool   `json:"clear,omitempty"`
}

// Policy answers GET /v1/admin/policy and a load or clear: the installed
// site policy script, Source "" when none, with the index and time of
// the load that installed it and the admin who did; Index is the entry
// a load or clear committed at.
type Policy struct {
	Source    string    `json:"source"`
	By        string    `json:"by,omitempty"`
	LoadIndex uint64    `json:"load_index,omitempty"`
	LoadedAt  time.Time `json:"loaded_at,omitzero"`
	Index     uint64    `json:"index,omitempty"`
}

// LoadPolicy installs (or with req.Clear removes) the site policy script
// as one replicated command; a script that does not compile changes
// nothing and its error names the line and column.
func (c *Client) LoadPolicy(ctx context.Context, req PolicyRequest) (Policy, error) {
	var resp Policy
	err := c.do(ctx, http.MethodPost, "/v1/admin/policy", req, &resp)
	return resp, err
}

// Policy returns the installed site policy script.
func (c *Client) Policy(ctx context.Context) (Policy, error) {
	var p Policy
	err := c.do(ctx, http.MethodGet, "/v1/admin/policy", nil, &p)
	return p, err
}
