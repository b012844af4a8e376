package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

var testEvents = []client.Event{
	{Index: 811, At: time.Date(2026, 11, 22, 7, 1, 2, 123e6, time.UTC), Kind: "leader-elected", Instance: -1, Detail: "server s2, term 4"},
	{Index: 812, At: time.Date(2026, 11, 22, 7, 1, 2, 123e6, time.UTC), Kind: "machine-unreachable", Instance: -1, Machine: "stub3", Detail: "lease expired"},
	{Index: 812, At: time.Date(2026, 11, 22, 7, 1, 2, 123e6, time.UTC), Kind: "instance-lost", Job: 7, Instance: 0, Attempt: 1, Machine: "stub3", Detail: "the lease of machine stub3 expired"},
}

func TestFormatEvent(t *testing.T) {
	tests := []struct {
		name string
		ev   client.Event
		want string
	}{
		{"leader", testEvents[0], "2026-11-22T07:01:02.123Z  #811  leader-elected  server s2, term 4"},
		{"machine", testEvents[1], "2026-11-22T07:01:02.123Z  #812  machine-unreachable  machine=stub3  lease expired"},
		{"instance", testEvents[2], "2026-11-22T07:01:02.123Z  #812  instance-lost  job=7 instance=0 attempt=1 machine=stub3  the lease of machine stub3 expired"},
		{"job", client.Event{Index: 5, At: testEvents[0].At, Kind: "job-submitted", Job: 2, Instance: -1}, "2026-11-22T07:01:02.123Z  #5  job-submitted  job=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatEvent(tt.ev); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// eventsServer serves testEvents: a listing, or a stream that sends them
// all, breaks, and on the reconnect (which must resume after the last one)
// holds the stream open, closing resumed.
func eventsServer(t *testing.T, resumed chan<- struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/events" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if q.Get("follow") == "" {
			_ = json.NewEncoder(w).Encode(testEvents)
			return
		}
		if q.Get("after") == "0" {
			for _, e := range testEvents {
				_ = json.NewEncoder(w).Encode(e)
			}
			return
		}
		if got, want := q.Get("after"), "812"; got != want {
			t.Errorf("reconnect: got after=%s, want %s", got, want)
		}
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		close(resumed)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// runEventsCLI runs the events command with args and returns what it printed.
func runEventsCLI(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{Name: "netmgr", Commands: []*cli.Command{eventsCommand()}, Writer: &out, ErrWriter: &out}
	setCommon(app)
	if err := app.RunContext(ctx, append([]string{"netmgr", "events"}, args...)); err != nil {
		t.Fatalf("netmgr events %v: %v", args, err)
	}
	return out.String()
}

func TestEventsCommand(t *testing.T) {
	addr := eventsServer(t, nil)
	out := runEventsCLI(context.Background(), t, "--addr", addr)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != len(testEvents) || lines[1] != formatEvent(testEvents[1]) {
		t.Errorf("got %q, want %d lines, the second %q", out, len(testEvents), formatEvent(testEvents[1]))
	}
}

func TestEventsCommandFollowJSON(t *testing.T) {
	resumed := make(chan struct{})
	addr := eventsServer(t, resumed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-resumed:
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
		}
		cancel()
	}()
	out := runEventsCLI(ctx, t, "--addr", addr, "--follow", "--json")
	var got []client.Event
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var e client.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("decode %q: %v", out, err)
		}
		got = append(got, e)
	}
	if len(got) != len(testEvents) || got[2].Kind != "instance-lost" || got[2].Machine != "stub3" {
		t.Errorf("got %+v, want %+v", got, testEvents)
	}
	if !strings.Contains(out, `"kind":"instance-lost"`) {
		t.Errorf("got %q, want lower-case JSON keys", out)
	}
}
