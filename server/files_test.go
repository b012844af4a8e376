package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestBlobsFollowTheJob runs three servers (2 s job retention) and a
// stub: a job's copy_in, answered kept by a majority, reaches every
// server; the job reads it and its copy_out is kept with it. A sweep
// while the job is in the database removes only a blob no job names;
// once the job has left it, its files go too, from every server.
func TestBlobsFollowTheJob(t *testing.T) {
	t.Parallel()
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) { cfg.JobRetention = 2 * time.Second })
	c.WaitLeader()
	c.AddStub("alpha")
	cl := c.Client()
	testwait.For(t, 15*time.Second, "stub up", func() bool {
		ms, err := cl.Machines(ctx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "in.txt"), []byte("x\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, names, err := files.Pack([]string{"in.txt"}, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := cl.PutBlob(ctx(t), data)
	if err != nil || kept.Holders < 2 || kept.Servers != 3 {
		t.Fatalf("put: %+v %v; want kept by a majority of 3", kept, err)
	}
	in := files.Sum(data)
	stray := []byte("no job names me")
	if _, err := cl.PutBlob(ctx(t), stray); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the copy_in on every server", func() bool {
		for _, s := range c.Servers {
			if !s.HasBlob(in) || !s.HasBlob(files.Sum(stray)) {
				return false
			}
		}
		return true
	})
	spec := shSpec("wc -l < in.txt > n.txt", 1)
	spec.CopyIn, spec.CopyInBlob, spec.CopyInSize, spec.CopyOut = names, in, int64(len(data)), []string{"n.txt"}
	resp, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	job, err := cl.WaitJob(ctx(t), strconv.FormatUint(resp.ID, 10), client.WaitDone)
	if err != nil || job.State != client.JobDone || len(job.Outputs) != 1 {
		t.Fatalf("job: %s %+v %v; want done with its outputs kept", job.State, job.Outputs, err)
	}
	out := job.Outputs[0].Blob
	got, err := cl.Blob(ctx(t), out)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := files.Unpack(got, dir); err != nil || fileText(dir, "n.txt") != "2\n" {
		t.Fatalf("n.txt = %q (%v), want 2", fileText(dir, "n.txt"), err)
	}
	// A server that lacks the outputs (down while they were kept) fetches
	// them from a peer when asked, checks them and keeps them.
	if err := c.Servers[1].DropBlob(out); err != nil {
		t.Fatal(err)
	}
	again, err := c.Client(1).Blob(ctx(t), out)
	if err != nil || string(again) != string(got) || !c.Servers[1].HasBlob(out) {
		t.Errorf("server 1 without the outputs: %v, same bytes %v, kept again %v", err, string(again) == string(got), c.Servers[1].HasBlob(out))
	}
	for i, s := range c.Servers {
		s.SweepBlobs(time.Now().Add(time.Minute))
		if s.HasBlob(files.Sum(stray)) {
			t.Errorf("server %d kept a blob no job names", i)
		}
		if s.HasBlob(in) != true {
			t.Errorf("server %d removed the copy_in of a job in the database", i)
		}
	}
	// netstatus -s shows what each server keeps (FILES).
	ss, err := cl.Servers(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Files < 2 || s.FilesBytes < int64(len(data)) {
			t.Errorf("server %s reports %d archives, %d bytes; want the job's copy_in and outputs", s.Name, s.Files, s.FilesBytes)
		}
	}
	testwait.For(t, 30*time.Second, "the job's files gone from every server once the job left", func() bool {
		for _, s := range c.Servers {
			s.SweepBlobs(time.Now().Add(time.Minute))
			if s.HasBlob(in) || s.HasBlob(out) {
				return false
			}
		}
		return true
	})
	ss, err = cl.Servers(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Files != 0 || s.FilesBytes != 0 {
			t.Errorf("server %s reports %d archives, %d bytes after the job left; want none", s.Name, s.Files, s.FilesBytes)
		}
	}
}

// fileText returns the content of dir/name, or "" when it cannot be read.
func fileText(dir, name string) string {
	data, _ := os.ReadFile(filepath.Join(dir, name))
	return string(data)
}
