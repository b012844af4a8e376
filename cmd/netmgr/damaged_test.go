package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/stub"
)

// TestDamagedFilesStopWithOneLine damages the files a real run left, a
// server's raft.db and Raft snapshot and a stub's outbox, and starts the
// netmgr binary on each: it exits non-zero with one line on stderr that
// names the file, says what is wrong and how to recover, and no panic.
// The same files undamaged start.
func TestDamagedFilesStopWithOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr")
	}
	bin := netmgrBinary(t)
	pristine := realDataDirs(t)
	certs, err := pki.MakeCluster(t.TempDir(), time.Hour,
		pki.Identity{Role: pki.RoleServer, Name: "s0"}, pki.Identity{Role: pki.RoleStub, Name: "m0"})
	if err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(t.TempDir(), "gossip.keyring")
	if err := pki.WriteKeyring(keyring, [][]byte{pki.NewGossipKey()}, false); err != nil {
		t.Fatal(err)
	}
	tlsArgs := func(role pki.Role, name string) []string {
		f := certs[pki.Identity{Role: role, Name: name}]
		return []string{"--ca-file", f.CA, "--cert-file", f.Cert, "--key-file", f.Key, "--gossip-keyring", keyring}
	}
	snap := newestSnapshot(t, filepath.Join(pristine, "server"))

	tests := []struct {
		name   string
		role   string // "server" or "stub"
		file   string // relative to the copy; "" for none
		damage func(t *testing.T, path string)
		want   []string // in the one line; nil: the process starts
	}{
		{"server whole", "server", "", nil, nil},
		{"raft.db garbage", "server", "server/raft.db", garbagePages, []string{"raft.db is corrupt", "move the data dir aside"}},
		{"raft.db truncated", "server", "server/raft.db", truncateHalf, []string{"raft.db is truncated", "move the data dir aside"}},
		{"raft.db meta pages zeroed", "server", "server/raft.db", zeroMeta, []string{"raft.db is corrupt", "move the data dir aside"}},
		{"snapshot garbage", "server", "server/snapshots/" + snap + "/state.bin", garbageMiddle, []string{"state.bin is corrupt", "move the data dir aside"}},
		{"snapshot truncated", "server", "server/snapshots/" + snap + "/state.bin", truncateHalf, []string{"state.bin is truncated", "move the data dir aside"}},
		{"snapshot meta garbage", "server", "server/snapshots/" + snap + "/meta.json", garbageMiddle, []string{"meta.json is corrupt", "move the data dir aside"}},
		{"stub whole", "stub", "", nil, nil},
		{"outbox garbage", "stub", "stub/outbox.db", garbagePages, []string{"outbox.db is corrupt", "move it aside", "attempts"}},
		{"outbox truncated", "stub", "stub/outbox.db", truncateHalf, []string{"outbox.db is truncated", "move it aside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			openToEveryone(t, dir) // else the stub warns that jobs cannot reach its exec dir
			copyTree(t, pristine, dir)
			if tt.damage != nil {
				tt.damage(t, filepath.Join(dir, tt.file))
			}
			var args []string
			if tt.role == "server" {
				args = append([]string{"server", "--name", "s0", "--data-dir", filepath.Join(dir, "server"), "--bootstrap-expect", "1",
					"--http", "127.0.0.1:0", "--raft", "127.0.0.1:0", "--gossip", "127.0.0.1:0"}, tlsArgs(pki.RoleServer, "s0")...)
			} else {
				args = append([]string{"stub", "--socket", "", "--name", "m0", "--data-dir", filepath.Join(dir, "stub"), "--exec-dir", filepath.Join(dir, "exec"),
					"--http", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--join", "127.0.0.1:1"}, tlsArgs(pki.RoleStub, "m0")...)
			}
			stderr, code := runUntilListening(t, bin, args)
			if tt.want == nil {
				if code != 0 {
					t.Fatalf("undamaged %s exited %d: %s", tt.role, code, stderr)
				}
				return
			}
			if code == 0 {
				t.Fatalf("%s on a damaged %s exited 0, want non-zero; stderr:\n%s", tt.role, tt.file, stderr)
			}
			if n := strings.Count(stderr, "\n"); n != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", n, stderr)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr shows a panic:\n%s", stderr)
			}
			line := strings.TrimSpace(stderr)
			if !strings.Contains(line, filepath.Join(dir, tt.file)) {
				t.Errorf("stderr does not name %s:\n%s", filepath.Join(dir, tt.file), line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("stderr lacks %q:\n%s", w, line)
				}
			}
			t.Logf("%s: exit %d: %s", tt.name, code, line)
		})
	}
}

// runUntilListening runs the netmgr binary with args until it exits or,
// when it starts, until it prints the line saying it listens (it is then
// stopped with SIGTERM and counts as exit 0). It returns its stderr up to
// then and its exit code.
func runUntilListening(t *testing.T, bin string, args []string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	listening := make(chan bool, 1)
	go func() {
		buf := make([]byte, 512)
		n, _ := out.Read(buf)
		listening <- bytes.Contains(buf[:n], []byte(" api https://"))
		_, _ = bytes.NewBuffer(nil).ReadFrom(out)
	}()
	if <-listening {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		return stderr.String(), 0
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &ee):
		return stderr.String(), ee.ExitCode()
	}
	t.Fatalf("run %v: %v", args, err)
	return "", 0
}

// realDataDirs runs a one-server group and a stub in this process, on
// the production storage path (raft-boltdb, file snapshots, the stub's
// bbolt outbox), with Raft set to snapshot after a few entries, runs a
// few jobs, and returns the directory holding the server's data dir
// ("server") and the stub's ("stub", "exec") once a snapshot is written
// and both have stopped.
func realDataDirs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil { // jobs run as the test's user
			t.Fatal(err)
		}
	}
	srv, err := server.New(server.Config{
		Name: "s0", DataDir: filepath.Join(dir, "server"), BootstrapExpect: 1,
		HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0",
		Logger: servertest.Logger(),
		TuneRaft: func(c *raft.Config) {
			c.SnapshotThreshold = 4
			c.SnapshotInterval = 100 * time.Millisecond
		},
	})
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	defer srv.Shutdown()
	st, err := stub.New(stub.Config{
		Name: "m0", DataDir: filepath.Join(dir, "stub"), ExecDir: filepath.Join(dir, "exec"),
		HTTPAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", Join: []string{srv.GossipAddr()},
		Logger: servertest.Logger(),
	})
	if err != nil {
		t.Fatalf("start stub: %v", err)
	}
	defer st.Shutdown()
	cl, err := client.New([]string{srv.HTTPAddr()}, client.WithUser(servertest.CurrentUser(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 6 {
		sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
			Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", "echo hello"}, Min: 2,
		}})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		if _, err := cl.WaitJob(ctx, fmt.Sprint(sub.ID), client.WaitDone); err != nil {
			t.Fatalf("wait for job %d: %v", sub.ID, err)
		}
	}
	testwait.For(t, 30*time.Second, "a snapshot", func() bool {
		return newestSnapshotName(filepath.Join(dir, "server")) != ""
	})
	if err := st.Shutdown(); err != nil {
		t.Fatalf("stop stub: %v", err)
	}
	if err := srv.Shutdown(); err != nil {
		t.Fatalf("stop server: %v", err)
	}
	return dir
}

// newestSnapshot is the name of the newest snapshot in the server data
// dir, the one Raft restores: by term, then index (not by name: "2-10-…"
// sorts before "2-5-…").
func newestSnapshot(t *testing.T, dataDir string) string {
	t.Helper()
	name := newestSnapshotName(dataDir)
	if name == "" {
		t.Fatalf("no snapshot in %s", dataDir)
	}
	return name
}

func newestSnapshotName(dataDir string) string {
	store, err := raft.NewFileSnapshotStore(dataDir, 2, io.Discard)
	if err != nil {
		return ""
	}
	snaps, err := store.List()
	if err != nil || len(snaps) == 0 {
		return ""
	}
	return snaps[0].ID
}

// copyTree copies the regular files and directories under src to dst,
// skipping sockets and the like.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// garbagePages writes garbage over every page of a bbolt file but its two
// meta pages.
func garbagePages(t *testing.T, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	overwrite(t, path, 2*page, int(fi.Size()-2*page))
}

// garbageMiddle writes garbage over the middle third of a file.
func garbageMiddle(t *testing.T, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	overwrite(t, path, fi.Size()/3, int(max(fi.Size()/3, 1)))
}

// zeroMeta zeroes both meta pages of a bbolt file.
func zeroMeta(t *testing.T, path string) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 2*os.Getpagesize()), 0); err != nil {
		t.Fatal(err)
	}
}

// truncateHalf cuts a file to half its size.
func truncateHalf(t *testing.T, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// overwrite writes n bytes of a repeating pattern at off in path.
func overwrite(t *testing.T, path string, off int64, n int) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x5a}, n/5+1)[:n]
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
