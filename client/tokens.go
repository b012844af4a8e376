package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// API tokens let a user reach the servers from outside the pool (a
// laptop, a program): an admin issues one for a user, the user sends it as
// "Authorization: Bearer TOKEN" (WithToken), and the servers act as that
// user until it expires or is revoked. The servers keep only its SHA-256.

// Token lifetimes.
const (
	// DefaultTokenTTL is how long a token lasts when the request names
	// no lifetime.
	DefaultTokenTTL = 30 * 24 * time.Hour
	// MaxTokenTTL is the longest lifetime the servers grant.
	MaxTokenTTL = 365 * 24 * time.Hour
)

// TokenRequest asks for a new token for User (POST /v1/tokens, admins
// only). TTLMS is its lifetime in milliseconds; 0 means DefaultTokenTTL.
type TokenRequest struct {
	User  string `json:"user"`
	TTLMS int64  `json:"ttl_ms,omitempty"`
}

// NewToken is a token just issued. It is the only answer that holds the
// token itself: the servers cannot show it again.
type NewToken struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	User      string    `json:"user"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Token describes an issued token, without the token itself. Expired
// says whether it had expired by the answering server's clock.
type Token struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	IssuedBy  string    `json:"issued_by"`
	Expired   bool      `json:"expired,omitempty"`
}

// CreateToken issues a token for req.User (admins only). A request the
// client retries after a lost answer may issue a second token, which
// Tokens lists and RevokeToken removes.
func (c *Client) CreateToken(ctx context.Context, req TokenRequest) (NewToken, error) {
	var out NewToken
	err := c.do(ctx, http.MethodPost, "/v1/tokens", req, &out)
	return out, err
}

// Tokens lists the tokens the servers hold, expired ones included, oldest
// first (admins only).
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	var out []Token
	err := c.do(ctx, http.MethodGet, "/v1/tokens", nil, &out)
	return out, err
}

// RevokeToken removes a token by ID (admins only): every server refuses it
// once it has applied the revocation. An unknown ID is an error wrapping
// ErrNotFound.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, nil)
}
