package stub

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// A batch answers each Start on its own, in order: new attempts start, a
// Start with no binary is refused with 400, a repeat is taken and not
// started again.
func TestStartBatch(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)

	known := shJob(1, 0, "true")
	mustStart(t, c, known)
	batch := client.StartBatchRequest{Starts: []client.StartRequest{
		shJob(2, 0, "true"),
		{JobID: 3, Attempt: 1},
		known,
		shJob(2, 1, "true"),
	}}
	tests := []struct {
		name string
		want []client.StartResult // Error compared by substring
	}{
		{name: "first", want: []client.StartResult{
			{Status: http.StatusOK, Started: true},
			{Status: http.StatusBadRequest, Error: "no binary"},
			{Status: http.StatusOK},
			{Status: http.StatusOK, Started: true},
		}},
		{name: "repeated", want: []client.StartResult{
			{Status: http.StatusOK},
			{Status: http.StatusBadRequest, Error: "no binary"},
			{Status: http.StatusOK},
			{Status: http.StatusOK},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.StartBatch(context.Background(), batch)
			if err != nil {
				t.Fatalf("StartBatch: %v", err)
			}
			if len(resp.Results) != len(tt.want) {
				t.Fatalf("got %d results, want %d", len(resp.Results), len(tt.want))
			}
			for i, got := range resp.Results {
				want := tt.want[i]
				if got.Status != want.Status || got.Started != want.Started || !strings.Contains(got.Error, want.Error) || (want.Error == "" && got.Error != "") {
					t.Errorf("result %d = %+v, want %+v", i, got, want)
				}
			}
		})
	}
	for _, req := range []client.StartRequest{batch.Starts[0], batch.Starts[3]} {
		if evs := srv.waitTerm(t, keyOf(req)); len(evs) != 2 {
			t.Errorf("events of %s = %+v, want one REGISTER and one TERM", keyOf(req), evs)
		}
	}
}

// A batch the stub cannot take as a whole is refused with 400.
func TestStartBatchRefused(t *testing.T) {
	s := newTestStub(t, Config{})
	c := stubClient(t, s)
	batch := client.StartBatchRequest{Starts: make([]client.StartRequest, maxBatchStarts+1)}
	_, err := c.StartBatch(context.Background(), batch)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("StartBatch of %d starts: err = %v, want a 400", len(batch.Starts), err)
	}
}
