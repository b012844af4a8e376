package client

import (
	"errors"
	"fmt"
	"net/http"
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
	// ErrNotSupported means the peer does not know the endpoint (it
	// answered 404 or 405): an older version, during a rolling upgrade.
	ErrNotSupported = errors.New("endpoint not supported")
)

// notSupported wraps err, from operation op, in ErrNotSupported when the
// peer answered that it does not know the endpoint (404 or 405): an older
// version during a rolling upgrade. Any other err is returned as is.
func notSupported(op string, err error) error {
	var apiErr *APIError
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed) {
		return fmt.Errorf("%s: %w: %w", op, ErrNotSupported, err)
	}
	return err
}

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
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%v (tried %s): %v", ErrNoServer, strings.Join(e.tried, ", "), e.last)
}

func (e *unreachableError) Unwrap() []error { return []error{ErrNoServer, e.last} }
