package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// issueAttempts bounds how many fresh IDs an issue tries when the one it
// drew is taken (one chance in 2^32 per token held).
const issueAttempts = 3

// handleCreateToken issues an API token for a user (admins only) and
// answers with the token itself, which no later request can show.
func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	admin, ok := s.requireAdmin(w, r, "issue token")
	if !ok {
		return
	}
	var req client.TokenRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read token request: %w", err))
		return
	}
	ttl, err := tokenTTL(req)
	if err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	if !s.groupAppliesNow(fsm.TokenIssueType) {
		s.writeError(w, http.StatusConflict, fmt.Errorf("issue token: %w", errUpgradeFirst))
		return
	}
	for range issueAttempts {
		id, token, err := newToken()
		if err != nil {
			s.writeError(w, http.StatusInternalServerError, fmt.Errorf("issue token: %w", err))
			return
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		c := fsm.TokenIssue{
			ID: id, User: req.User, Hash: hashToken(token),
			IssuedAt: now, ExpiresAt: now.Add(ttl), IssuedBy: admin,
		}
		res, err := s.apply(fsm.TokenIssueType, c)
		switch {
		case err != nil:
			s.writeApplyError(w, err)
			return
		case errors.Is(res.Err, fsm.ErrTokenExists):
			continue // a clash of random IDs: draw again
		case res.Err != nil:
			s.writeError(w, http.StatusBadRequest, res.Err)
			return
		}
		s.log.Info("token issued", "id", id, "user", req.User, "by", admin, "expires", c.ExpiresAt, "index", res.Index)
		s.writeJSON(w, http.StatusOK, client.NewToken{ID: id, Token: token, User: req.User, ExpiresAt: c.ExpiresAt})
		return
	}
	s.writeError(w, http.StatusInternalServerError, fmt.Errorf("issue token: %d random IDs in a row were taken", issueAttempts))
}

// tokenTTL checks a token request and returns the lifetime it asks.
func tokenTTL(req client.TokenRequest) (time.Duration, error) {
	switch {
	case req.User == "":
		return 0, errors.New("issue token: a user is required")
	case !userNamePattern().MatchString(req.User):
		return 0, fmt.Errorf("issue token: %q is not a user name (letters, digits, '_', '.', '-'; at most 64)", req.User)
	case req.TTLMS < 0:
		return 0, fmt.Errorf("issue token: ttl_ms %d is negative", req.TTLMS)
	case req.TTLMS == 0:
		return client.DefaultTokenTTL, nil
	case req.TTLMS > client.MaxTokenTTL.Milliseconds():
		return 0, fmt.Errorf("issue token: a lifetime of %v is longer than the longest, %v", time.Duration(req.TTLMS)*time.Millisecond, client.MaxTokenTTL)
	}
	return time.Duration(req.TTLMS) * time.Millisecond, nil
}

// handleTokens lists the tokens without their secrets, oldest first,
// marking those expired by this server's clock (admins only).
func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.requireAdmin(w, r, "list tokens"); !ok {
		return
	}
	now := time.Now()
	out := []client.Token{}
	s.fsm.Read(func(v fsm.View) {
		for _, t := range v.Tokens() {
			out = append(out, client.Token{
				ID: t.ID, User: t.User, IssuedAt: t.IssuedAt, ExpiresAt: t.ExpiresAt,
				IssuedBy: t.IssuedBy, Expired: t.Expired(now),
			})
		}
	})
	slices.SortStableFunc(out, func(a, b client.Token) int { return a.IssuedAt.Compare(b.IssuedAt) })
	s.writeJSON(w, http.StatusOK, out)
}

// handleRevokeToken removes a token by ID (admins only).
func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	admin, ok := s.requireAdmin(w, r, "revoke token "+id)
	if !ok {
		return
	}
	if !s.groupAppliesNow(fsm.TokenRevokeType) {
		s.writeError(w, http.StatusConflict, fmt.Errorf("revoke token %s: %w", id, errUpgradeFirst))
		return
	}
	res, err := s.apply(fsm.TokenRevokeType, fsm.TokenRevoke{At: time.Now().UTC(), ID: id, By: admin})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	switch {
	case errors.Is(res.Err, fsm.ErrNoSuchToken):
		// The client names the ID it asked for; the answer need not.
		s.writeError(w, http.StatusNotFound, fmt.Errorf("%w (netmgr token list shows the tokens held)", fsm.ErrNoSuchToken))
		return
	case res.Err != nil:
		s.writeError(w, http.StatusBadRequest, res.Err)
		return
	}
	s.log.Info("token revoked", "id", id, "by", admin, "index", res.Index)
	s.writeJSON(w, http.StatusOK, struct{}{})
}
