package client

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrNoServer means no server in the address list answered in time.
	ErrNoServer = errors.New("no netmgr server reachable")
	// ErrNoAddress means the client was given no server address.
	ErrNoAddress = errors.New("no server address given (use --addr or NETMGR_ADDR)")
	// ErrNotFound is wrapped by an APIError for a 404 answer.
	ErrNotFound = errors.New("not found")
)

// APIError is a definite answer from a server that the request was wrong
// (a 4xx status); retrying elsewhere would not help.
type APIError struct {
	Status  int
	Message string
}

// Error returns the server's message.
func (e *APIError) Error() string { return e.Message }

// Unwrap lets errors.Is(err, ErrNotFound) match a 404.
func (e *APIError) Unwrap() error {
	if e.Status == 404 {
		return ErrNotFound
	}
	return nil
}

// unreachableError lists every address tried and the last failure.
type unreachableError struct {
	tried []string
	last  error
	stub  bool // a StubClient's: the peer is a stub, not a server
}

func (e *unreachableError) Error() string {
	if e.stub {
		return fmt.Sprintf("stub at %s did not answer: %v", strings.Join(e.tried, ", "), e.last)
	}
	return fmt.Sprintf("%v (tried %s): %v", ErrNoServer, strings.Join(e.tried, ", "), e.last)
}

func (e *unreachableError) Unwrap() []error { return []error{ErrNoServer, e.last} }
