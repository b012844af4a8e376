package server_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// wantAPIErrorParts checks err is an API answer with status and a message
// that holds each of parts.
func wantAPIErrorParts(t *testing.T, err error, status int, parts ...string) {
	t.Helper()
	for _, p := range parts {
		wantAPIError(t, err, status, p)
	}
}

// TestJobNamesUnambiguous checks that a name of the automatic form is
// refused, that a name several live jobs share is a 409 listing them for
// every request that takes a job, and that a name means its one live job
// once the others have ended.
func TestJobNamesUnambiguous(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")

	spec := shSpec("exec sleep 600", 1)
	spec.Name = "job7"
	_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	wantAPIErrorParts(t, err, http.StatusBadRequest, "symb_name=job7", "automatic names")

	spec.Name = "dup"
	var ids []string
	for range 2 {
		resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strconv.FormatUint(resp.ID, 10))
	}
	_, err = cl.Job(ctx(t), "dup")
	wantAPIErrorParts(t, err, http.StatusConflict, "ambiguous job name", "2 live jobs", ids[0]+" (dup.", ids[1]+" (dup.")
	_, err = cl.Why(ctx(t), "dup")
	wantAPIErrorParts(t, err, http.StatusConflict, "ambiguous job name")
	_, err = cl.Kill(ctx(t), "dup", client.KillRequest{})
	wantAPIErrorParts(t, err, http.StatusConflict, "ambiguous job name")

	if _, err := cl.Kill(ctx(t), ids[0], client.KillRequest{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitJob(ctx(t), ids[0], client.WaitDone); err != nil {
		t.Fatal(err)
	}
	job, err := cl.Job(ctx(t), "dup")
	if err != nil {
		t.Fatalf("GET dup with one live job: %v", err)
	}
	if got := strconv.FormatUint(job.ID, 10); got != ids[1] {
		t.Errorf("dup means job %s, want the live one, %s", got, ids[1])
	}
	if _, err := cl.Kill(ctx(t), "dup", client.KillRequest{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitJob(ctx(t), ids[1], client.WaitDone); err != nil {
		t.Fatal(err)
	}
	if job, err = cl.Job(ctx(t), "dup"); err != nil || strconv.FormatUint(job.ID, 10) != ids[1] {
		t.Errorf("dup with no live job means %d, %v; want the most recent, %s", job.ID, err, ids[1])
	}
}

// TestSubmitUnrunnable checks a job no machine meets the requirements of
// is queued with the reason in the answer, or with no_queue refused with
// nothing created; a runnable one gets no reason.
func TestSubmitUnrunnable(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha", "beta")
	spec := shSpec("true", 1)
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec, NoQueue: true})
	if err != nil || resp.Unrunnable != "" {
		t.Fatalf("a runnable job: %+v, %v; want it accepted with no reason", resp, err)
	}
	before, err := cl.Jobs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}

	spec.Keys = []string{"sparc"}
	resp, err = cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if want := "2 machines lack key sparc"; resp.Unrunnable != want {
		t.Errorf("unrunnable job: reason %q, want %q", resp.Unrunnable, want)
	}
	_, err = cl.Submit(ctx(t), client.SubmitRequest{Spec: spec, NoQueue: true})
	wantAPIErrorParts(t, err, http.StatusConflict, "no machine can run this now: 2 machines lack key sparc", "not queued")
	after, err := cl.Jobs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 {
		t.Errorf("%d jobs after one queued and one refused, want %d", len(after), len(before)+1)
	}
}

// TestSubmitDir checks a job's working directory is kept and that a
// relative one is refused.
func TestSubmitDir(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	dir := t.TempDir()
	spec := shSpec("pwd", 1)
	spec.Dir = "relative/dir"
	_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	wantAPIErrorParts(t, err, http.StatusBadRequest, "must be an absolute path")

	spec.Dir = dir
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	job, err := cl.WaitJob(ctx(t), strconv.FormatUint(resp.ID, 10), client.WaitDone)
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Dir != dir || job.State != client.JobDone {
		t.Errorf("job %d: dir %q, state %s; want %q and %s", job.ID, job.Spec.Dir, job.State, dir, client.JobDone)
	}
}
