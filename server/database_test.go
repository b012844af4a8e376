package server_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

const twoMachines = `key lic /* licensed */
mtype big = {lic, nprocs=2, rating=4}
machine alpha = big
machine beta = {big, nprocs=1}
admin_id root
allow_root_jobs
`

// TestReloadDrainsWithoutKilling loads a database, runs a job on a
// declared machine, then loads one without that machine: the machine is
// drained (no new work) and the running job is left alone.
func TestReloadDrainsWithoutKilling(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha", "beta")
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "two.db", Text: twoMachines}); err != nil {
		t.Fatalf("load: %v", err)
	}
	ms, err := cl.Machines(ctx(t))
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	for _, m := range ms {
		want := map[string]int{"alpha": 2, "beta": 1}[m.Name]
		if m.Slots != want || m.Rating != 4 || m.MType != "big" || !m.Declared {
			t.Errorf("%s: slots %d rating %v mtype %q declared %v, want %d, 4, big, true", m.Name, m.Slots, m.Rating, m.MType, m.Declared, want)
		}
	}

	long, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"600"}, Machines: []string{"beta"},
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	waitRunning(t, cl, long.Name, 1)

	resp, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "one.db", Text: "key lic\nmtype big = {lic, nprocs=2}\nmachine alpha = big\nallow_root_jobs\n"})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if len(resp.Draining) != 1 || resp.Draining[0] != "beta" {
		t.Errorf("draining %v, want [beta]", resp.Draining)
	}
	job, err := cl.Job(ctx(t), long.Name)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	if job.Instances[0].State != client.InstanceRunning {
		t.Errorf("job on the drained machine is %s, want still running", job.Instances[0].State)
	}
	next, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/true"}, Machines: []string{"beta"},
	}})
	if err != nil {
		t.Fatalf("submit to drained: %v", err)
	}
	why, err := cl.Why(ctx(t), next.Name)
	if err != nil {
		t.Fatalf("why: %v", err)
	}
	if len(why) != 1 || !strings.Contains(why[0].Reason, "down or draining") {
		t.Errorf("why %+v, want the drained machine named as down or draining", why)
	}
	text, err := cl.Database(ctx(t))
	if err != nil {
		t.Fatalf("show: %v", err)
	}
	if !strings.Contains(text.Text, "machine alpha = big") || strings.Contains(text.Text, "beta") {
		t.Errorf("admin show printed:\n%s\nwant the reloaded database", text.Text)
	}
}

func TestLoadRefusesBadTextAndNonAdmins(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	_, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "bad.db", Text: "mtype x = {nokey}\n"})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "bad.db:1:") {
		t.Fatalf("got %v, want a 400 naming bad.db:1:", err)
	}
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Text: "admin_id tclark\n"}); err != nil {
		t.Fatalf("first load: %v", err)
	}
	other := c.ClientAs("mallory")
	_, err = other.LoadDatabase(ctx(t), client.DatabaseText{Text: "admin_id mallory\n"})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Fatalf("got %v, want 403 for a user who is not an admin_id", err)
	}
}

func TestDatabaseFileLoadedWhenGroupForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "isis.db")
	text, err := os.ReadFile("../testdata/isis.db")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	s, err := server.New(server.Config{
		Name: "solo", DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0", BootstrapExpect: 1, DatabaseFile: path, Logger: servertest.Logger(),
	})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	cl, err := client.New([]string{s.HTTPAddr()})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	var shown client.DatabaseText
	testwait.For(t, 10*time.Second, "database loaded", func() bool {
		shown, err = cl.Database(ctx(t))
		return err == nil && strings.Contains(shown.Text, "admin_id tclark")
	})
	for _, want := range []string{"mtype sparc1+", "machine bongo", "add_q NEW_Q"} {
		if !strings.Contains(shown.Text, want) {
			t.Errorf("admin show lacks %q:\n%s", want, shown.Text)
		}
	}

	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, []byte("machine x = nosuchtype\n"), 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	_, err = server.New(server.Config{
		Name: "other", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0", BootstrapExpect: 1, DatabaseFile: bad,
	})
	if err == nil || !strings.Contains(err.Error(), bad+":1:") {
		t.Errorf("got %v, want a start error naming %s:1:", err, bad)
	}
}

func TestRestartOnFailureRunsAgainUpToTheLimit(t *testing.T) {
	t.Parallel()
	_, cl := poolWithStubs(t, 1, "alpha")
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", "exit 3"},
		Restart: client.RestartOnFailure, MaxRestarts: 2,
	}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	var job client.Job
	testwait.For(t, 20*time.Second, "restarts exhausted", func() bool {
		job, err = cl.Job(ctx(t), resp.Name)
		return err == nil && job.Instances[0].Finished()
	})
	in := job.Instances[0]
	if in.State != client.InstanceFailed || in.ExitCode != 3 || in.Attempt != 3 || in.Restarts != 2 {
		t.Errorf("got %s exit %d attempt %d restarts %d, want failed exit 3 after attempt 3 and 2 restarts",
			in.State, in.ExitCode, in.Attempt, in.Restarts)
	}
}

// TestFilesRefusedWithoutTheirArchive: copy_in naming files the servers
// were never sent, or an archive hash they do not keep, and a copy_out
// path outside the exec dir are refused at submit with an error that says
// why, and no job is made.
func TestFilesRefusedWithoutTheirArchive(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	cl := c.Client()
	base := func() client.JobSpec { return client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}} }
	tests := []struct {
		option string
		set    func(*client.JobSpec)
		want   string
	}{
		{"copy_in", func(s *client.JobSpec) { s.CopyIn = []string{"a"} }, "copy_in: the files were not sent"},
		{"copy_in_blob", func(s *client.JobSpec) { s.CopyIn, s.CopyInBlob = []string{"a"}, strings.Repeat("0", 64) }, "copy_in: the files were not kept before the submit"},
		{"copy_out", func(s *client.JobSpec) { s.CopyOut = []string{"../b"} }, "a path (globs allowed) inside the exec dir"},
	}
	for _, tt := range tests {
		t.Run(tt.option, func(t *testing.T) {
			s := base()
			tt.set(&s)
			_, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: s})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	jobs, err := cl.Jobs(ctx(t))
	if err != nil || len(jobs) != 0 {
		t.Errorf("got %d jobs (err %v), want none", len(jobs), err)
	}
}
