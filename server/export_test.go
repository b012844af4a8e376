package server

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// What the external tests (package server_test) reach of the server's
// internals.

// TokenUser is tokenUser, for tests that present tokens to a server
// without the identity layer in front of it.
func (s *Server) TokenUser(token string, now time.Time) (string, error) {
	return s.tokenUser(token, now)
}

// SweepTokens is sweepTokens, for tests that sweep as if at now.
func (s *Server) SweepTokens(now time.Time) { s.sweepTokens(now) }

// The token errors, for errors.Is in tests.
var (
	ErrTokenMalformed = errTokenMalformed
	ErrTokenUnknown   = errTokenUnknown
	ErrTokenExpired   = errTokenExpired
)

// PendingMail is how many mails this server's copy of the state holds
// pending.
func (s *Server) PendingMail() int {
	var n int
	s.fsm.Read(func(v fsm.View) { n = v.PendingMailCount() })
	return n
}
