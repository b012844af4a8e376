package client

import (
	"context"
	"net/http"
	"time"
)

// StubClient talks to one stub's HTTP API. It is safe for concurrent use.
type StubClient struct {
	c *Client
}

// NewStub returns a client for the stub at addr ("host:port" or a URL).
// Requests are not retried: the caller (the leader's dispatcher) decides
// what to do when a stub does not answer.
func NewStub(addr string, hc *http.Client) (*StubClient, error) {
	c, err := New([]string{addr}, WithRetryFor(0))
	if err != nil {
		return nil, err
	}
	if hc != nil {
		c.hc = hc
	} else {
		c.hc = &http.Client{Timeout: 10 * time.Second, Transport: newTransport()}
	}
	return &StubClient{c: c}, nil
}

// Start asks the stub to start an attempt. Repeating a Start for the same
// (job, instance, attempt) is harmless.
func (s *StubClient) Start(ctx context.Context, req StartRequest) error {
	return s.c.do(ctx, http.MethodPost, "/v1/start", req, nil)
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
