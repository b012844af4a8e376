package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Token is an API token an admin issued: who it speaks for and until
// when. Only the hex SHA-256 of the token string is kept; the server that
// issued it showed the token once.
type Token struct {
	ID          string    `json:"id"`
	User        string    `json:"user"`
	Hash        string    `json:"hash"`
	IssuedAt    time.Time `json:"issued_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	IssuedBy    string    `json:"issued_by"`
	CreateIndex uint64    `json:"create_index"`
}

// Expired reports whether the token is no longer valid at now. Only
// servers ask, with their own clock; Apply never does.
func (t *Token) Expired(now time.Time) bool { return !now.Before(t.ExpiresAt) }

// tokenExpiryLayout is how events print a token's expiry.
const tokenExpiryLayout = "2006-01-02 15:04 MST"

// applyTokenIssue records a token. Its ID and hash must be new: the
// proposer picks a random ID and the hash of 32 random bytes, so a clash
// is a retry or a bug, refused rather than overwriting a token.
func (d *db) applyTokenIssue(index uint64, c *TokenIssue) *Result {
	switch {
	case c.ID == "" || c.User == "" || !isSHA256Hex(c.Hash) || !c.ExpiresAt.After(c.IssuedAt):
		return &Result{Index: index, Err: fmt.Errorf("issue token %q: an ID, a user, a SHA-256 hash and an expiry after the issue time are required: %w", c.ID, ErrInvalidToken)}
	case d.tokens[c.ID] != nil:
		return &Result{Index: index, Err: fmt.Errorf("issue token %s: %w: the ID is taken", c.ID, ErrTokenExists)}
	case d.tokenByHash[c.Hash] != "":
		return &Result{Index: index, Err: fmt.Errorf("issue token %s: %w: the hash is taken", c.ID, ErrTokenExists)}
	}
	t := &Token{
		ID: c.ID, User: c.User, Hash: c.Hash, IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt,
		IssuedBy: c.IssuedBy, CreateIndex: index,
	}
	d.tokens[t.ID] = t
	d.tokenByHash[t.Hash] = t.ID
	d.event(index, c.IssuedAt, EventTokenIssued, 0, -1, 0, "", fmt.Sprintf("%s issued token %s for %s, expires %s",
		actor(c.IssuedBy), t.ID, t.User, t.ExpiresAt.UTC().Format(tokenExpiryLayout)))
	return &Result{Index: index}
}

// applyTokenRevoke removes a token. An unknown ID is an error, so that a
// typing mistake is not taken for a revocation; a retried revoke that
// already committed reports it too.
func (d *db) applyTokenRevoke(index uint64, c *TokenRevoke) *Result {
	t, ok := d.tokens[c.ID]
	if !ok {
		return &Result{Index: index, Err: fmt.Errorf("revoke token %s: %w", c.ID, ErrNoSuchToken)}
	}
	delete(d.tokens, t.ID)
	delete(d.tokenByHash, t.Hash)
	detail := fmt.Sprintf("%s revoked token %s of %s", actor(c.By), t.ID, t.User)
	if c.Reason != "" {
		detail += " (" + c.Reason + ")"
	}
	d.event(index, c.At, EventTokenRevoked, 0, -1, 0, "", detail)
	return &Result{Index: index}
}

// applyServerRemoved records the event and files the admins' mail.
func (d *db) applyServerRemoved(index uint64, c *ServerRemoved) *Result {
	d.event(index, c.At, EventServerRemoved, 0, -1, 0, "", fmt.Sprintf("%s removed server %s from the raft group", actor(c.By), c.Name))
	d.noteServerRemoved(index, c)
	return &Result{Index: index}
}

// indexTokens rebuilds the lookup by hash from the tokens.
func (d *db) indexTokens() {
	d.tokenByHash = make(map[string]string, len(d.tokens))
	for id, t := range d.tokens {
		d.tokenByHash[t.Hash] = id
	}
}

func (d *db) sortedTokens() []*Token {
	out := make([]*Token, 0, len(d.tokens))
	for _, t := range d.tokens {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Token) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// isSHA256Hex reports whether s is a SHA-256 sum in lower-case hex.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Tokens returns every token the database holds, expired ones included,
// by ID.
func (v View) Tokens() []*Token { return v.d.sortedTokens() }

// TokenByHash returns the token whose string hashes to hash (lower-case
// hex SHA-256).
func (v View) TokenByHash(hash string) (*Token, bool) {
	id, ok := v.d.tokenByHash[hash]
	if !ok {
		return nil, false
	}
	return v.d.tokens[id], true
}

// Token returns a token by ID.
func (v View) Token(id string) (*Token, bool) {
	t, ok := v.d.tokens[id]
	return t, ok
}
