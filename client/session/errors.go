package session

import "errors"

// Errors of the package.
var (
	// ErrClosed means the Link was closed: the session is over.
	ErrClosed = errors.New("session closed")
	// ErrProtocol means the peer sent what the protocol does not allow.
	ErrProtocol = errors.New("session protocol violation")
)
