package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// An API token is "nmt_" + an 8-hex-digit ID + "_" + 32 random bytes in
// unpadded base64url: 56 characters. The ID names the token in lists,
// events and revocations; the replicated state keeps only the SHA-256 of
// the whole string, so neither the log, a snapshot nor a server's memory
// holds a usable token. The secret may itself contain '_', so a token is
// read by position, not split.
const (
	tokenPrefix      = "nmt_"
	tokenIDLen       = 8
	tokenSecretBytes = 32
)

// tokenLen is the length of every well-formed token.
var tokenLen = len(tokenPrefix) + tokenIDLen + 1 + base64.RawURLEncoding.EncodedLen(tokenSecretBytes)

// newToken returns a fresh token and its ID, from crypto/rand.
func newToken() (id, token string, err error) {
	b := make([]byte, tokenIDLen/2+tokenSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("make token: %w", err)
	}
	id = hex.EncodeToString(b[:tokenIDLen/2])
	return id, tokenPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(b[tokenIDLen/2:]), nil
}

// parseToken checks a token's form and returns its ID.
func parseToken(token string) (string, error) {
	if len(token) != tokenLen || token[:len(tokenPrefix)] != tokenPrefix || token[len(tokenPrefix)+tokenIDLen] != '_' {
		return "", errTokenMalformed
	}
	id := token[len(tokenPrefix) : len(tokenPrefix)+tokenIDLen]
	if !isTokenID(id) {
		return "", errTokenMalformed
	}
	secret, err := base64.RawURLEncoding.Strict().DecodeString(token[len(tokenPrefix)+tokenIDLen+1:])
	if err != nil || len(secret) != tokenSecretBytes {
		return "", errTokenMalformed
	}
	return id, nil
}

// isTokenID reports whether id has the form of a token ID: 8 lower-case
// hex digits.
func isTokenID(id string) bool {
	if len(id) != tokenIDLen {
		return false
	}
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// hashToken is what the replicated state keeps of a token: the lower-case
// hex SHA-256 of the whole string.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenUser returns the user a bearer token speaks for at now, by this
// server's copy of the state: a revocation counts here once this server
// has applied it. A malformed token is refused before any lookup. The
// lookup is by SHA-256, so no comparison of secrets takes place.
func (s *Server) tokenUser(token string, now time.Time) (user string, err error) {
	id, err := parseToken(token)
	if err != nil {
		return "", err
	}
	hash := hashToken(token)
	var found bool
	var expires time.Time
	s.fsm.Read(func(v fsm.View) {
		if t, ok := v.TokenByHash(hash); ok && t.ID == id {
			found, user, expires = true, t.User, t.ExpiresAt
		}
	})
	switch {
	case !found:
		return "", fmt.Errorf("%w %s", errTokenUnknown, id)
	case !now.Before(expires):
		return "", fmt.Errorf("%w: token %s expired at %s; ask an admin for a new one",
			errTokenExpired, id, expires.UTC().Format(time.RFC3339))
	}
	return user, nil
}

// tokenSweepAfter is how long after its expiry the leader removes a
// token: for a day token list still shows it, marked expired.
const tokenSweepAfter = 24 * time.Hour

// sweepTokens revokes the tokens that expired more than tokenSweepAfter
// before now. The leader runs it on its ticks; servers refuse an expired
// token anyway, so this only tidies the database.
func (s *Server) sweepTokens(now time.Time) {
	var cmds []command
	s.fsm.Read(func(v fsm.View) {
		for _, t := range v.Tokens() {
			if now.Sub(t.ExpiresAt) > tokenSweepAfter {
				cmds = append(cmds, command{fsm.TokenRevokeType, fsm.TokenRevoke{
					At: now.UTC(), ID: t.ID, By: "server " + s.cfg.Name,
					Reason: "expired " + t.ExpiresAt.UTC().Format("2006-01-02 15:04 MST"),
				}})
			}
		}
	})
	if len(cmds) == 0 || !s.groupApplies(fsm.TokenRevokeType) {
		return
	}
	if _, err := s.applyAll(cmds); err != nil {
		s.log.Warn("sweep expired tokens failed", "tokens", len(cmds), "err", err)
	}
}

// userNamePattern is what a token's user may be called: a POSIX portable
// user name, as useradd accepts by default. It is compiled at its first
// use, not at start-up: the counted repetition makes it costly to
// compile, and every netexec would pay for it (the CLI and the server
// are one binary).
var userNamePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)
})
