package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// hashJob packs a script that writes the sha256 of its input to out.sum,
// and an input of n random bytes, and returns the archive, the spec that
// runs it with copy_out out.sum, and the input's sha256.
func hashJob(t *testing.T, n int) ([]byte, client.JobSpec, string) {
	t.Helper()
	src := t.TempDir()
	in := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range in {
		in[i] = byte(r.Uint32())
	}
	writeFiles(t, src, map[string]string{"run.sh": "#!/bin/sh\nsha256sum \"$1\" | cut -d' ' -f1 > out.sum\n"})
	if err := os.WriteFile(filepath.Join(src, "in.bin"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	data, names, err := files.Pack([]string{"run.sh", "in.bin"}, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(in)
	spec := client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "./run.sh"}, Args: []string{"./in.bin"},
		CopyIn: names, CopyInBlob: files.Sum(data), CopyInSize: int64(len(data)), CopyOut: []string{"out.sum"},
	}
	return data, spec, hex.EncodeToString(sum[:])
}

// fetchOutSum reads instance 0's kept out.sum of job id.
func fetchOutSum(ctx context.Context, t *testing.T, cl *client.Client, id string) string {
	t.Helper()
	job, err := cl.Job(ctx, id)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	if len(job.Outputs) != 1 || job.Outputs[0].Blob == "" {
		t.Fatalf("job %s (%s) kept outputs %+v, want instance 0's out.sum", id, job.State, job.Outputs)
	}
	data, err := cl.Blob(ctx, job.Outputs[0].Blob)
	if err != nil {
		t.Fatalf("fetch outputs of job %s: %v", id, err)
	}
	dir := t.TempDir()
	if _, err := files.Unpack(data, dir); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(readFile(t, dir, "out.sum"))
}

// blobAt reports whether server p keeps blob sum in its store.
func blobAt(p *servertest.Proc, sum string) bool {
	_, err := os.Stat(filepath.Join(p.DataDir, "blobs", sum))
	return err == nil
}

// TestFilesSurviveServerLoss runs three server processes and a stub. A
// server is killed (SIGKILL) while it receives a job's copy_in: the
// upload fails, no server keeps a part of it, and sent again it is kept
// by the two left, a majority, so the job is accepted; the killed
// server, back, has no leftover of the broken upload. The job runs on a
// machine that had neither its script nor its input, checks the input's
// hash, and its copy_out is kept. Then the leader is killed between the
// job's end and the fetch: the new leader's group gives the outputs
// whole.
func TestFilesSurviveServerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts three server and a stub processes")
	}
	c, cl := procCluster(t, t.TempDir(), 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data, spec, inSum := hashJob(t, 8<<20)

	victim := 0
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.Servers[victim].URL()+"/v1/blobs/"+spec.CopyInBlob, pr)
	if err != nil {
		t.Fatal(err)
	}
	hc := c.HTTPClient()
	hc.Timeout = time.Minute
	answered := make(chan error, 1)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = fmt.Errorf("answered %s: %s", resp.Status, msg)
			if resp.StatusCode < 300 {
				err = nil
			}
		}
		answered <- err
	}()
	if _, err := pw.Write(data[:len(data)/2]); err != nil { // returns once the server has read it
		t.Fatal(err)
	}
	if err := c.KillServer(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = pw.CloseWithError(fmt.Errorf("the server was killed"))
	if err := <-answered; err == nil {
		t.Fatal("an upload whose server was killed half way was answered as kept")
	}
	for _, p := range c.Servers {
		if blobAt(p, spec.CopyInBlob) {
			t.Errorf("server %s keeps the files of an upload that broke half way", p.Name)
		}
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	kept, err := cl.PutBlob(ctx, data)
	if err != nil || kept.Holders < 2 || kept.Servers != 3 {
		t.Fatalf("upload again with one server of three down: %+v, %v; want kept by 2 of 3", kept, err)
	}
	if err := c.RestartServer(victim); err != nil {
		t.Fatal(err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(c.Servers[victim].DataDir, "blobs", ".tmp-*")); len(tmps) > 0 {
		t.Errorf("the killed server kept the temporary files of the broken upload: %v", tmps)
	}
	if err := c.WaitCaughtUp(victim, 60*time.Second); err != nil {
		t.Fatal(err)
	}

	resp, err := cl.Submit(ctx, client.SubmitRequest{Spec: spec})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	id := strconv.FormatUint(resp.ID, 10)
	job, err := cl.WaitJob(ctx, id, client.WaitDone)
	if err != nil || job.Instances[0].State != client.InstanceExited || job.Instances[0].ExitCode != 0 {
		t.Fatalf("job %s: %+v, %v; want exited 0", id, job.Instances, err)
	}

	li, name := c.Leader()
	if li < 0 {
		t.Fatal("no leader")
	}
	if err := c.KillServer(li, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := fetchOutSum(ctx, t, cl, id); got != inSum {
		t.Errorf("out.sum fetched after leader %s was killed = %q, want the input's sha256 %q", name, got, inSum)
	}
}

// TestCopyOutSurvivesStubRestart: the stub is killed (SIGKILL) after the
// job ended and while it sends the job's copy_out, which the servers,
// frozen (SIGSTOP), cannot take. The stub started again finds the ended
// attempt, sends the outputs and then the end: the job ends with its
// outputs whole.
func TestCopyOutSurvivesStubRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts server and stub processes")
	}
	c, cl := procCluster(t, t.TempDir(), 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gate := t.TempDir()
	script := "#!/bin/sh\nwhile [ ! -e " + gate + "/go ]; do sleep 0.02; done\nhead -c 3000000 /dev/urandom > out.bin\nsha256sum out.bin | cut -d' ' -f1 > out.sum\n"
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"run.sh": script})
	data, names, err := files.Pack([]string{"run.sh"}, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutBlob(ctx, data); err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "./run.sh"},
		CopyIn:   names, CopyInBlob: files.Sum(data), CopyInSize: int64(len(data)), CopyOut: []string{"out.*"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatUint(resp.ID, 10)
	if _, err := cl.WaitJob(ctx, id, client.WaitStarted); err != nil {
		t.Fatal(err)
	}
	srv := c.Servers[0]
	if err := syscall.Kill(srv.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(srv.PID(), syscall.SIGCONT)
		}
	}
	defer thaw()
	if err := os.WriteFile(filepath.Join(gate, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stubLog := c.Stubs[0].LogPath
	// Once it has, it sends the outputs, to a server that does not answer.
	testwait.For(t, 60*time.Second, "the stub to log the attempt's end", func() bool {
		log, _ := os.ReadFile(stubLog)
		return strings.Contains(string(log), "attempt ended")
	})
	if err := c.StopStub(0, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	thaw()
	if err := c.RestartStub(0); err != nil {
		t.Fatal(err)
	}
	job, err := cl.WaitJob(ctx, id, client.WaitDone)
	if err != nil || job.Instances[0].State != client.InstanceExited {
		t.Fatalf("job %s after the stub's restart: %+v, %v; want exited", id, job.Instances, err)
	}
	if len(job.Outputs) != 1 || len(job.Outputs[0].Files) != 2 {
		t.Fatalf("kept outputs %+v, want out.bin and out.sum", job.Outputs)
	}
	blob, err := cl.Blob(ctx, job.Outputs[0].Blob)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := files.Unpack(blob, dir); err != nil {
		t.Fatal(err)
	}
	bin, _ := os.ReadFile(filepath.Join(dir, "out.bin"))
	sum := sha256.Sum256(bin)
	if got, want := hex.EncodeToString(sum[:]), strings.TrimSpace(readFile(t, dir, "out.sum")); len(bin) != 3000000 || got != want {
		t.Errorf("out.bin (%d bytes) hashes to %s, out.sum says %s: the outputs are not whole", len(bin), got, want)
	}
}
