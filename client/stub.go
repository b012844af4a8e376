package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// StubClient talks to one stub's HTTP API. It is safe for concurrent use.
type StubClient struct {
	c *Client
}

// NewStub returns a client for the stub at addr ("host:port" or a URL).
// Requests are not retried: the caller (the leader's dispatcher) decides
// what to do when a stub does not answer. Without WithHTTPClient or
// WithTLS it uses a plain HTTP client with a 10 s timeout; callers that
// mean a particular machine say so with ExpectPeer.
func NewStub(addr string, opts ...Option) (*StubClient, error) {
	base := []Option{WithHTTPClient(&http.Client{Timeout: 10 * time.Second, Transport: newTransport()})}
	c, err := New([]string{addr}, append(append(base, opts...), WithRetryFor(0))...)
	if err != nil {
		return nil, err
	}
	c.stub = true
	return &StubClient{c: c}, nil
}

// StartBatch asks the stub to start several attempts in one request
// (POST /v1/starts) and returns one result per Start, in order; see
// StartResult.Err. It blocks until the stub has answered every Start.
func (s *StubClient) StartBatch(ctx context.Context, req StartBatchRequest) (StartBatchResponse, error) {
	var resp StartBatchResponse
	err := s.c.do(ctx, http.MethodPost, "/v1/starts", req, &resp)
	switch {
	case err != nil:
		return StartBatchResponse{}, err
	case len(resp.Results) != len(req.Starts):
		return StartBatchResponse{}, fmt.Errorf("start batch: %d results for %d starts", len(resp.Results), len(req.Starts))
	}
	return resp, nil
}

// Err returns nil when the stub took the Start, and otherwise an error:
// an *APIError for a 4xx Status (a definite refusal), a plain error for a
// 5xx one.
func (r StartResult) Err() error {
	switch {
	case r.Status == http.StatusOK:
		return nil
	case r.Status >= 400 && r.Status < 500:
		return &APIError{Status: r.Status, Message: r.Error}
	}
	return fmt.Errorf("start: status %d: %s", r.Status, r.Error)
}

// Signal asks the stub to signal an attempt's process group.
func (s *StubClient) Signal(ctx context.Context, req SignalRequest) error {
	return s.c.do(ctx, http.MethodPost, "/v1/signal", req, nil)
}

// Facts returns what the stub reports about its machine.
func (s *StubClient) Facts(ctx context.Context) (Facts, error) {
	var f Facts
	err := s.c.do(ctx, http.MethodGet, "/v1/facts", nil, &f)
	return f, err
}

// OutageStatement asks the stub whether its lease has run out
// (GET /v1/outage).
func (s *StubClient) OutageStatement(ctx context.Context) (OutageStatement, error) {
	var st OutageStatement
	err := s.c.do(ctx, http.MethodGet, "/v1/outage", nil, &st)
	return st, err
}

// OutageWitness asks the stub to collect, in a round that begins after
// the request arrives, the statements of every stub it knows, or in a
// large pool their tally (POST /v1/outage/witness): a stub that predates
// the tally answers with the statements alone.
func (s *StubClient) OutageWitness(ctx context.Context) (OutageWitness, error) {
	var w OutageWitness
	err := s.c.do(ctx, http.MethodPost, "/v1/outage/witness", nil, &w)
	return w, err
}

// OutageTally asks the stub to tally, in a round that begins after the
// request arrives and ends within within, the statements of the stubs it
// knows whose names lie in [from, to] (GET /v1/outage/tally).
func (s *StubClient) OutageTally(ctx context.Context, from, to string, within time.Duration) (OutageTally, error) {
	var t OutageTally
	q := url.Values{"from": {from}, "to": {to}, "within_ms": {strconv.FormatInt(within.Milliseconds(), 10)}}
	err := s.c.do(ctx, http.MethodGet, "/v1/outage/tally?"+q.Encode(), nil, &t)
	return t, err
}
