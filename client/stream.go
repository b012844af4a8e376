package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Logs returns a job instance's standard output or error as its stub
// holds it, streamed through a server (GET /v1/jobs/{ref}/logs): the
// caller reads it to its end and closes it. With q.Follow the stream
// goes on while the attempt runs and ends, with io.EOF, once it has
// ended; a stream that breaks before then (a server or stub went) ends
// with another error. A refusal is an *APIError: 403 for a user who
// neither owns the job nor administers the pool, 404 for an unknown job
// or instance, 409 for an instance that has not started, 410 for output
// removed after the exec retention.
func (c *Client) Logs(ctx context.Context, ref string, q LogsQuery) (io.ReadCloser, error) {
	return c.stream(ctx, "/v1/jobs/"+url.PathEscape(ref)+"/logs?"+q.query())
}

// Log returns attempt req's standard output or error from the stub, as
// Client.Logs does: the caller reads it to its end and closes it.
func (s *StubClient) Log(ctx context.Context, req LogRequest) (io.ReadCloser, error) {
	return s.c.stream(ctx, "/v1/logs?"+req.query())
}

// stream sends GET path to the servers in turn until one answers and
// returns the answer's body, which lasts as long as ctx (no client
// timeout). A server that cannot be reached, or answers 503 (no leader),
// is passed over, and the servers are tried again for the client's retry
// period as Client.do does; any other error answer is returned, an
// *APIError for a 4xx.
func (c *Client) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	hc := *c.hc
	hc.Timeout = 0 // the stream lasts as long as ctx
	clock := c.newRetryClock()
	backoff := 25 * time.Millisecond
	var slow throttle
	for {
		addrs := c.Addrs()
		var last error
		for i := 0; i < len(addrs); i++ {
			addr := addrs[i]
			body, err := c.streamOnce(ctx, &hc, addr+path)
			var skip *retryable
			var th *throttled
			switch {
			case err == nil:
				return body, nil
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.As(err, &th):
				if err := slow.wait(ctx, th); err != nil {
					return nil, err
				}
				clock.progress()
				i-- // the same server again
				continue
			case errors.As(err, &skip) || !isAnswer(err):
				last = err
				clock.failed(err)
				continue
			}
			return nil, err
		}
		wait, ok := clock.next(backoff, addrs, last)
		if !ok {
			return nil, &unreachableError{tried: addrs, last: last, stub: c.stub}
		}
		select {
		case <-ctx.Done():
			return nil, &unreachableError{tried: addrs, last: ctx.Err(), stub: c.stub}
		case <-time.After(wait):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// isAnswer reports whether err is a server's answer (not a failure to
// reach it).
func isAnswer(err error) bool {
	var apiErr *APIError
	var answered *answeredError
	return errors.As(err, &apiErr) || errors.As(err, &answered)
}

// answeredError is a server's 5xx answer other than 503: another server
// would answer the same.
type answeredError struct{ msg string }

func (e *answeredError) Error() string { return e.msg }

// streamOnce sends GET u and returns the body of a 2xx answer.
func (c *Client) streamOnce(ctx context.Context, hc *http.Client, u string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &APIError{Message: fmt.Sprintf("build request %s: %v", u, err)}
	}
	c.setIdentity(req)
	if c.expect != nil {
		req = req.WithContext(context.WithValue(ctx, expectKey{}, *c.expect))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if c.expect != nil && resp.TLS != nil {
		if err := checkPeer(resp.TLS, *c.expect, u); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	if resp.StatusCode < 300 {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var e ErrorResponse
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	if th := throttledBy(resp, msg); th != nil {
		return nil, th
	}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return nil, &retryable{msg: fmt.Sprintf("%s: %s: %s", u, resp.Status, msg)}
	case resp.StatusCode >= 500:
		return nil, &answeredError{msg: msg}
	}
	return nil, &APIError{Status: resp.StatusCode, Message: msg}
}
