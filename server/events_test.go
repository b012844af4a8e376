package server_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

func TestFollowEventsWhileJobRuns(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	c.AddStub("alpha")
	cl := c.Client()

	// Follow from the start in the background; the test owns the goroutine
	// and ends it by cancelling.
	fctx, cancel := context.WithCancel(context.Background())
	evs := make(chan client.Event, 1024)
	done := make(chan error, 1)
	go func() {
		done <- cl.FollowEvents(fctx, 0, func(e client.Event) error {
			select {
			case evs <- e:
				return nil
			case <-fctx.Done():
				return fctx.Err()
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("FollowEvents: got %v, want context.Canceled", err)
		}
	})

	// next waits for the following event that matches.
	deadline := time.After(30 * time.Second)
	var seen []client.Event
	next := func(what string, match func(client.Event) bool) client.Event {
		t.Helper()
		for {
			select {
			case e := <-evs:
				seen = append(seen, e)
				if match(e) {
					return e
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s; saw %+v", what, seen)
			}
		}
	}
	kind := func(k string) func(client.Event) bool { return func(e client.Event) bool { return e.Kind == k } }

	next("leader elected", kind("leader-elected"))
	next("machine joined", func(e client.Event) bool { return e.Kind == "machine-joined" && e.Machine == "alpha" })

	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("exit 0", 1)})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	ofJob := func(k string) func(client.Event) bool {
		return func(e client.Event) bool { return e.Kind == k && e.Job == resp.ID }
	}
	var got []client.Event
	for _, k := range []string{"job-submitted", "instance-placed", "instance-started", "instance-ended"} {
		got = append(got, next(k, ofJob(k)))
	}
	for i, e := range got {
		if e.At.IsZero() {
			t.Errorf("%s: got no time, want the command's", e.Kind)
		}
		// A job placed with its submit (SubmitPlace) shares its index, and
		// so does an end the stub reported with the start (a job as short
		// as this one, under load: both events in one report, one entry).
		sameEntry := e.Kind == "instance-placed" || e.Kind == "instance-ended"
		if i > 0 && (e.Index < got[i-1].Index || e.Index == got[i-1].Index && !sameEntry) {
			t.Errorf("%s at index %d: want after %s at %d", e.Kind, e.Index, got[i-1].Kind, got[i-1].Index)
		}
		if i > 0 && e.Machine != "alpha" {
			t.Errorf("%s: got machine %q, want alpha", e.Kind, e.Machine)
		}
	}

	// The one-shot listing agrees with the stream.
	listed, err := cl.Events(ctx(t), got[0].Index-1)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	if !slices.ContainsFunc(listed, func(e client.Event) bool { return e.Kind == "instance-ended" && e.Job == resp.ID }) {
		t.Errorf("events after %d: got %+v, want the job's end", got[0].Index-1, listed)
	}
}
