package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// StartBatch returns a refusal as an *APIError with its status, and checks
// there is one result per Start.
func TestStartBatch(t *testing.T) {
	two := client.StartBatchRequest{Starts: []client.StartRequest{{JobID: 1, Binary: "true"}, {JobID: 2, Binary: "true"}}}
	tests := []struct {
		name       string
		status     int
		body       any
		wantStatus int // of the *APIError; 0 = none
		wantErr    bool
	}{
		{name: "ok", status: http.StatusOK, body: client.StartBatchResponse{Results: []client.StartResult{{Status: 200, Started: true}, {Status: 200}}}},
		{name: "404", status: http.StatusNotFound, body: client.ErrorResponse{Error: "no such endpoint"}, wantStatus: 404, wantErr: true},
		{name: "method not allowed", status: http.StatusMethodNotAllowed, body: client.ErrorResponse{Error: "no"}, wantStatus: 405, wantErr: true},
		{name: "bad request", status: http.StatusBadRequest, body: client.ErrorResponse{Error: "decode"}, wantStatus: 400, wantErr: true},
		{name: "too few results", status: http.StatusOK, body: client.StartBatchResponse{Results: []client.StartResult{{Status: 200}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("POST /v1/starts", jsonHandler(t, tt.status, tt.body))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			c, err := client.NewStub(srv.URL)
			if err != nil {
				t.Fatalf("NewStub: %v", err)
			}
			resp, err := c.StartBatch(context.Background(), two)
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("StartBatch error = %v, want error %v", err, tt.wantErr)
			}
			var apiErr *client.APIError
			gotStatus := 0
			if errors.As(err, &apiErr) {
				gotStatus = apiErr.Status
			}
			if gotStatus != tt.wantStatus {
				t.Errorf("APIError status = %d, want %d (err %v)", gotStatus, tt.wantStatus, err)
			}
			if !tt.wantErr && len(resp.Results) != len(two.Starts) {
				t.Errorf("got %d results, want %d", len(resp.Results), len(two.Starts))
			}
		})
	}
}

// StartResult.Err gives nil when taken, an *APIError for a refusal, a
// plain error for a stub's failure.
func TestStartResultErr(t *testing.T) {
	tests := []struct {
		name       string
		res        client.StartResult
		wantErr    bool
		wantStatus int // of the *APIError; 0 = none
	}{
		{name: "started", res: client.StartResult{Status: 200, Started: true}},
		{name: "repeat", res: client.StartResult{Status: 200}},
		{name: "no binary", res: client.StartResult{Status: 400, Error: "start: no binary"}, wantErr: true, wantStatus: 400},
		{name: "lease expired", res: client.StartResult{Status: 409, Error: "lease expired"}, wantErr: true, wantStatus: 409},
		{name: "shutting down", res: client.StartResult{Status: 503, Error: "shutting down"}, wantErr: true},
		{name: "internal", res: client.StartResult{Status: 500, Error: "disk full"}, wantErr: true},
		{name: "no status", res: client.StartResult{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.res.Err()
			if got := err != nil; got != tt.wantErr {
				t.Fatalf("Err() = %v, want error %v", err, tt.wantErr)
			}
			var apiErr *client.APIError
			gotStatus := 0
			if errors.As(err, &apiErr) {
				gotStatus = apiErr.Status
			}
			if gotStatus != tt.wantStatus {
				t.Errorf("APIError status = %d, want %d", gotStatus, tt.wantStatus)
			}
		})
	}
}
