package server_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// submitNamed submits spec under name and returns its id.
func submitNamed(t *testing.T, cl *client.Client, name string, spec client.JobSpec) uint64 {
	t.Helper()
	spec.Name = name
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return resp.ID
}

// TestDependencyChainOnCluster runs a chain on three servers and two
// stubs: a succeeds; b (afterok a) starts only after a ended, and fails;
// c (afterok b) is cancelled naming b; d (after b) runs; e (afternotok a)
// is cancelled. While a runs, b is held and --why says what it waits for.
func TestDependencyChainOnCluster(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 3, "alpha", "beta")
	gate := t.TempDir() + "/go"
	a := submitNamed(t, cl, "a", shSpec(`while [ ! -e `+gate+` ]; do sleep 0.02; done`, 1))
	b := submitNamed(t, cl, "b", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/false"}, AfterOK: []string{"a"}})
	c := submitNamed(t, cl, "c", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, AfterOK: []string{"b"}})
	d := submitNamed(t, cl, "d", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, After: []string{strconv.FormatUint(b, 10)}})
	e := submitNamed(t, cl, "e", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, AfterNotOK: []string{"a"}})

	if _, err := cl.WaitJob(ctx(t), "a", client.WaitStarted); err != nil {
		t.Fatalf("wait for a to start: %v", err)
	}
	job, err := cl.Job(ctx(t), "b")
	if err != nil || job.State != client.JobHeld {
		t.Fatalf("b while a runs: got %q %v, want %s", job.State, err, client.JobHeld)
	}
	why, err := cl.Why(ctx(t), "b")
	if want := "waits for job " + strconv.FormatUint(a, 10) + " (running) to succeed"; err != nil || len(why) != 1 || !strings.Contains(why[0].Reason, want) {
		t.Fatalf("why b: got %+v %v, want one instance whose reason has %q", why, err, want)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatalf("open the gate: %v", err)
	}

	for _, tc := range []struct {
		id     uint64
		state  string
		reason string
	}{
		{a, client.JobDone, ""},
		{b, client.JobFailed, ""},
		{c, client.JobCancelled, "dependency: afterok job " + strconv.FormatUint(b, 10) + " (b) failed"},
		{d, client.JobDone, ""},
		{e, client.JobCancelled, "dependency: afternotok job " + strconv.FormatUint(a, 10) + " (a) done"},
	} {
		job, err := cl.WaitJob(ctx(t), strconv.FormatUint(tc.id, 10), client.WaitDone)
		if err != nil {
			t.Fatalf("wait for job %d: %v", tc.id, err)
		}
		if job.State != tc.state {
			t.Errorf("job %d (%s): got %s, want %s", tc.id, job.Name, job.State, tc.state)
		}
		if tc.reason != "" && job.Instances[0].Reason != tc.reason {
			t.Errorf("job %d (%s): got reason %q, want %q", tc.id, job.Name, job.Instances[0].Reason, tc.reason)
		}
	}
	ja, _ := cl.Job(ctx(t), "a")
	jb, _ := cl.Job(ctx(t), "b")
	if ended, started := ja.Instances[0].EndedAt, jb.Instances[0].StartedAt; started.Before(ended) {
		t.Errorf("b started at %v, before a ended at %v", started, ended)
	}
	evs, err := cl.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	cancelled := map[uint64]string{}
	for _, ev := range evs {
		if ev.Kind == "job-cancelled" {
			cancelled[ev.Job] = ev.Detail
		}
	}
	if len(cancelled) != 2 || !strings.Contains(cancelled[c], "afterok job") || !strings.Contains(cancelled[e], "afternotok job") {
		t.Errorf("job-cancelled events: got %v, want jobs %d and %d", cancelled, c, e)
	}
}

// TestDependencyRefusals checks the errors at submit: an unknown name or
// id, a name several unfinished jobs carry, and that a held job can be
// killed, which cancels its afterok dependents.
func TestDependencyRefusals(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	sleep := shSpec("sleep 30", 1)
	for _, tc := range []struct {
		name string
		spec client.JobSpec
		want string
	}{
		{"unknown name", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, After: []string{"nosuch"}}, "after=nosuch: no job named nosuch"},
		{"unknown id", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, AfterOK: []string{"99"}}, "afterok=99: no job with id 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	first := submitNamed(t, cl, "twin", sleep)
	second := submitNamed(t, cl, "twin", sleep)
	_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, After: []string{"twin"}}})
	if want := "ambiguous job name"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("after=twin with two unfinished twins: got %v, want %q", err, want)
	}
	held := submitNamed(t, cl, "held", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, After: []string{strconv.FormatUint(first, 10)}})
	next := submitNamed(t, cl, "next", client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, AfterOK: []string{"held"}})
	if _, err := cl.Kill(ctx(t), "held", client.KillRequest{}); err != nil {
		t.Fatalf("kill the held job: %v", err)
	}
	for id, want := range map[uint64]string{held: client.JobKilled, next: client.JobCancelled} {
		job, err := cl.WaitJob(ctx(t), strconv.FormatUint(id, 10), client.WaitDone)
		if err != nil || job.State != want {
			t.Errorf("job %d: got %q %v, want %s", id, job.State, err, want)
		}
	}
	for _, id := range []uint64{first, second} {
		if _, err := cl.Kill(ctx(t), strconv.FormatUint(id, 10), client.KillRequest{}); err != nil {
			t.Fatalf("kill twin %d: %v", id, err)
		}
	}
	testwait.For(t, 10*time.Second, "twins ended", func() bool {
		j, err := cl.Job(ctx(t), strconv.FormatUint(second, 10))
		return err == nil && j.State == client.JobKilled
	})
}
