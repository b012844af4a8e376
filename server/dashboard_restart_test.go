package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/ui"
)

// timelineBurst opens the dashboard's event stream on the server at addr
// (insecure: the user is named by header) and reads events until done
// says it has what it waits for, or 10 s pass. It returns the events
// read, in order.
func timelineBurst(t *testing.T, addr string, done func([]ui.Event) bool) []ui.Event {
	t.Helper()
	c, cancel := context.WithTimeout(ctx(t), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, "GET", "http://"+addr+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(client.UserHeader, "tester")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /ui/events: %v", err)
	}
	defer resp.Body.Close()
	var evs []ui.Event
	r := bufio.NewReader(resp.Body)
	for !done(evs) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read /ui/events: %v; read %d events: %+v", err, len(evs), evs)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || strings.HasPrefix(data, `{"server"`) {
			continue // not an event, or the hello
		}
		var e ui.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// submitted picks the job-submitted events out of evs, without the
// per-hub sequence number.
func submitted(evs []ui.Event) []ui.Event {
	var out []ui.Event
	for _, e := range evs {
		if e.Kind == "job-submitted" {
			e.Seq = 0
			out = append(out, e)
		}
	}
	return out
}

// TestDashboardTimelineSurvivesRestart runs a single server on a data
// dir, submits jobs, snapshots (so that the restarted state replays none
// of their entries) and stops it. Started again, its dashboard stream's
// first burst has the events from before the restart, from its history,
// as they were live: same keys, texts and fields, in order, with the
// leader's elections among them.
func TestDashboardTimelineSurvivesRestart(t *testing.T) {
	t.Parallel()
	start := soloOnDataDir(t)

	s, cl := start()
	// The election's event is committed by the new leader's loop, which may
	// run after a submit that the raft leader already accepts; wait for it,
	// so that the submits come after it.
	timelineBurst(t, s.HTTPAddr(), func(evs []ui.Event) bool {
		return slices.ContainsFunc(evs, func(e ui.Event) bool { return e.Kind == "leader-elected" })
	})
	const jobs = 3
	for range jobs {
		if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	}
	live := submitted(timelineBurst(t, s.HTTPAddr(), func(evs []ui.Event) bool { return len(submitted(evs)) == jobs }))
	if err := s.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	s, _ = start()
	after := timelineBurst(t, s.HTTPAddr(), func(evs []ui.Event) bool { return len(submitted(evs)) >= jobs })
	if got := submitted(after); !reflect.DeepEqual(got[:jobs], live) {
		t.Errorf("after the restart the timeline starts with\n%+v\nwant the events from before it\n%+v", got[:jobs], live)
	}
	var elected bool
	var last uint64
	for _, e := range after {
		if e.Index != 0 && e.Index < last {
			t.Errorf("event %s (index %d) after index %d: out of order", e.Key, e.Index, last)
		}
		last = max(last, e.Index)
		elected = elected || (e.Kind == "leader-elected" && e.Index < live[0].Index)
	}
	if !elected {
		t.Errorf("the timeline after the restart lacks the election before the submits: %+v", after)
	}
}
