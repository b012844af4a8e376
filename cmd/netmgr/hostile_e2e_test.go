package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// hostileAgent is a `netmgr agent --dev` machine (its stub and supervisors run
// as root), an ordinary user made for the test, and a root-only secret
// every attack tries to read through the stub.
type hostileAgent struct {
	execDir string
	bin     string // the netmgr binary
	user    osUser
	secret  string // the path of a root-owned 0600 file
	marker  string // its content: must appear in no output the user sees
	work    string // a directory the user owns, for fetches and signals
}

// TestHostileJobs runs the attacks of issue 34 as an ordinary user of a
// dev agent, each a real job: links to a root-only file as stdout,
// stderr, a copy_out path and a directory on a copy_out path; the same
// swap while `netmgr logs -f` reads; a FIFO as stdout and as copy_out; a
// 100 GB sparse file and 100,000 files in copy_out; a job that leaves
// processes behind by setsid, nohup and a new name; a job that takes
// every right from its own directory; and a setuid file fetched by root.
// Each checks that nothing of the secret reaches the user and that the
// stub goes on answering.
func TestHostileJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it starts a server and a stub")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: the attacks need the stub to run as root and an ordinary user made with useradd, which needs root")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skipf("skipping: no useradd on this machine to create the test's user: %v", err)
	}
	h := newHostile(t)

	t.Run("links as stdout and stderr", func(t *testing.T) {
		id := h.exec(t, "--wait", "done", "/bin/sh", "-c", "echo mine; rm -f stdout stderr; ln -s "+h.secret+" stdout; ln -s "+h.secret+" stderr")
		for name, args := range map[string][]string{"stdout": {"logs", id}, "stderr": {"logs", "--stderr", id}} {
			code, out := h.run(t, args...)
			want := name + " of job " + id + " instance 0 is no longer a regular file (a link): not shown"
			if code == 0 || !strings.Contains(out, want) {
				t.Errorf("netmgr %s: exit %d\n%s\nwant a refusal saying %q", strings.Join(args, " "), code, out, want)
			}
			t.Logf("netmgr %s: exit %d: %s", strings.Join(args, " "), code, strings.TrimSpace(out))
		}
	})

	t.Run("swap during logs -f", func(t *testing.T) {
		gate := filepath.Join(h.work, "swap-now")
		id := h.exec(t, "--wait", "started", "/bin/sh", "-c",
			"echo before; while [ ! -e "+gate+" ]; do sleep 0.05; done; rm -f stdout; ln -s "+h.secret+" stdout; echo after >>stderr; sleep 0.5")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out syncBuffer
		cmd := h.command(ctx, "logs", "-f", id)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 30*time.Second, "logs -f to show the job's first line", func() bool {
			return strings.Contains(out.String(), "before")
		})
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("logs -f ended with %v:\n%s", err, out.String())
		}
		h.clean(t, "logs -f", out.String())
		// Read afresh, the replaced stdout is refused.
		code, text := h.run(t, "logs", id)
		if code == 0 || !strings.Contains(text, "(a link): not shown") {
			t.Errorf("netmgr logs after the swap: exit %d\n%s", code, text)
		}
	})

	t.Run("links in copy_out", func(t *testing.T) {
		id := h.exec(t, "--wait", "done", "--copy-out", "result,d/secret,ok", "/bin/sh", "-c",
			"ln -s "+h.secret+" result; ln -s "+filepath.Dir(h.secret)+" d; echo fine >ok")
		into, out := h.fetch(t, id)
		if got := readFile(t, into, "ok"); got != "fine\n" {
			t.Errorf("ok = %q, want the job's own file", got)
		}
		if !strings.Contains(out, "result: a symbolic link, not kept") || !strings.Contains(out, "d/secret: d: a symbolic link") {
			t.Errorf("netmgr fetch %s:\n%s\nwant the links named as not kept", id, out)
		}
	})

	t.Run("FIFOs as stdout and copy_out", func(t *testing.T) {
		start := time.Now()
		id := h.exec(t, "--wait", "done", "--copy-out", "out.fifo", "/bin/sh", "-c", "rm -f stdout; mkfifo stdout out.fifo")
		t.Logf("the job ended and its copy_out was decided %v after the submit", time.Since(start).Round(time.Millisecond))
		code, out := h.run(t, "logs", id)
		if code == 0 || !strings.Contains(out, "(a FIFO): not shown") {
			t.Errorf("netmgr logs of a FIFO: exit %d\n%s", code, out)
		}
		if _, out := h.fetch(t, id); !strings.Contains(out, "out.fifo: a FIFO, not a regular file") {
			t.Errorf("netmgr fetch %s:\n%s\nwant the FIFO named as not kept", id, out)
		}
	})

	t.Run("a 100 GB sparse file and 100,000 files in copy_out", func(t *testing.T) {
		start := time.Now()
		id := h.exec(t, "--wait", "done", "--copy-out", "big,many/*", "/bin/sh", "-c",
			"truncate -s 100G big && mkdir many && cd many && seq 100000 | xargs touch")
		t.Logf("100,000 files made and copy_out decided in %v", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		into, out := h.fetch(t, id)
		for _, want := range []string{"big: 100 GiB, over the copy_out limit", "many/*: 90000 more files not kept: over the copy_out limit of 10000 files"} {
			if !strings.Contains(out, want) {
				t.Errorf("netmgr fetch %s lacks %q:\n%.2000s", id, want, out)
			}
		}
		entries, err := os.ReadDir(filepath.Join(into, "many"))
		if err != nil || len(entries) != 10000 {
			t.Errorf("fetched many/: %d files, %v; want 10000", len(entries), err)
		}
		t.Logf("fetched 10,000 files in %v", time.Since(start).Round(time.Millisecond))
	})

	for _, end := range []string{"exit", "kill"} {
		t.Run("no process outlives its attempt: "+end, func(t *testing.T) {
			gate := filepath.Join(h.work, "exit-now")
			_ = os.Remove(gate)
			id := h.exec(t, "--wait", "started", "/bin/sh", "-c",
				"(setsid sleep 300 &); nohup sh -c 'exec -a innocent sleep 301' >/dev/null 2>&1 & "+
					"perl -e 'fork and exit; setpgrp; exec {\"sleep\"} \"kworker\", 302' & sh -c 'sleep 303 &'; "+
					"while [ ! -e "+gate+" ]; do sleep 0.05; done; exit 0")
			testwait.For(t, 30*time.Second, "job "+id+"'s four escapes running", func() bool {
				n := 0
				for _, p := range processesOf(h.user.uid) {
					if strings.HasSuffix(p, " sleep") || strings.HasSuffix(p, " innocent") || strings.HasSuffix(p, " kworker") {
						n++
					}
				}
				return n >= 4
			})
			want := "exited"
			if end == "kill" {
				want = "killed"
				if code, out := h.run(t, "kill", id); code != 0 {
					t.Fatalf("netmgr kill %s: exit %d\n%s", id, code, out)
				}
			} else if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 30*time.Second, "every process of "+h.user.name+" gone after job "+id+" ended", func() bool {
				return len(processesOf(h.user.uid)) == 0
			})
			testwait.For(t, 30*time.Second, "job "+id+" "+want, func() bool {
				code, out := h.run(t, "status", id)
				return code == 0 && strings.Contains(out, want)
			})
		})
	}

	t.Run("a job that chmods its own directory 000", func(t *testing.T) {
		id := h.exec(t, "--wait", "done", "/bin/sh", "-c", "mkdir -p sub/deeper && chmod 000 sub/deeper sub . && exit 0")
		dir := attemptDirIn(t, h.execDir, id+".0.1")
		testwait.For(t, 30*time.Second, "the exec dir removed after the retention", func() bool {
			_, err := os.Lstat(dir)
			return errors.Is(err, fs.ErrNotExist)
		})
	})

	t.Run("a setuid file fetched", func(t *testing.T) {
		id := h.exec(t, "--wait", "done", "--copy-out", "tool", "/bin/sh", "-c", "cp /bin/true tool && chmod 4755 tool")
		asUser, _ := h.fetch(t, id)
		asRoot := t.TempDir()
		if code, out, errOut := runCLI(t, "netmgr", "fetch", id, asRoot); code != exitOK {
			t.Fatalf("netmgr fetch as root: exit %d\n%s%s", code, out, errOut)
		}
		for who, dir := range map[string]string{h.user.name: asUser, "root": asRoot} {
			fi, err := os.Stat(filepath.Join(dir, "tool"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("tool fetched by %s is %v: setuid kept", who, fi.Mode())
			}
		}
	})
}

// newHostile starts the dev agent and makes the user and the secret.
func newHostile(t *testing.T) *hostileAgent {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	h := &hostileAgent{execDir: t.TempDir(), bin: netmgrBinary(t)}
	startDevAgent(t, h.execDir, "--exec-retention", "2s")
	h.user = newOSUser(t, "nmhx")
	for _, p := range []string{h.execDir, h.bin, os.Getenv(envSocket), os.Getenv(envCACert)} {
		openToEveryone(t, filepath.Dir(p))
	}

	var b [8]byte
	_, _ = rand.Read(b[:])
	h.marker = "ROOTSECRET-" + hex.EncodeToString(b[:])
	vault := filepath.Join(t.TempDir(), "vault")
	if err := os.Mkdir(vault, 0o755); err != nil {
		t.Fatal(err)
	}
	openToEveryone(t, vault)
	h.secret = filepath.Join(vault, "secret")
	if err := os.WriteFile(h.secret, []byte(h.marker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.work = filepath.Join(h.user.home, "work")
	if err := os.Mkdir(h.work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(h.work, h.user.uid, h.user.gid); err != nil {
		t.Fatal(err)
	}
	return h
}

// command is the netmgr binary run as the test's user, against the
// agent.
func (h *hostileAgent) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.user.home, "USER=" + h.user.name,
		envAddr + "=" + os.Getenv(envAddr), envSocket + "=" + os.Getenv(envSocket), envCACert + "=" + os.Getenv(envCACert)}
	cmd.Dir = h.work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(h.user.uid), Gid: uint32(h.user.gid)}}
	return cmd
}

// run runs netmgr as the user and returns its exit code and output,
// which it checks for the secret.
func (h *hostileAgent) run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := h.command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	h.clean(t, "netmgr "+strings.Join(args, " "), out.String())
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return exitErr.ExitCode(), out.String()
	}
	t.Fatalf("netmgr %s as %s: %v\n%s", strings.Join(args, " "), h.user.name, err, out.String())
	return 0, ""
}

// exec submits a job as the user and returns its id.
func (h *hostileAgent) exec(t *testing.T, args ...string) string {
	t.Helper()
	code, out := h.run(t, append([]string{"exec"}, args...)...)
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("netmgr exec %s: exit %d, no job id:\n%s", strings.Join(args, " "), code, out)
	}
	return m[1]
}

// fetch fetches job id's copy_out as the user into a new directory of
// theirs, checks every file in it for the secret, and returns the
// directory and what fetch said (it exits 1 when something was not
// kept, which these jobs arrange).
func (h *hostileAgent) fetch(t *testing.T, id string) (string, string) {
	t.Helper()
	into, err := os.MkdirTemp(h.work, "fetch-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(into, h.user.uid, h.user.gid); err != nil {
		t.Fatal(err)
	}
	code, out := h.run(t, "fetch", id, into)
	if code != 0 && !strings.Contains(out, "not kept: ") {
		t.Fatalf("netmgr fetch %s: exit %d\n%s", id, code, out)
	}
	err = filepath.WalkDir(into, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		h.clean(t, "fetched "+p, string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return into, out
}

// clean fails the test if what the user saw holds the secret.
func (h *hostileAgent) clean(t *testing.T, what, seen string) {
	t.Helper()
	if strings.Contains(seen, h.marker) {
		t.Errorf("%s showed the root-only secret:\n%.2000s", what, seen)
	}
}

// processesOf lists the processes of uid, as "pid comm".
func processesOf(uid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" && f[1] == strconv.Itoa(uid) {
				comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
				out = append(out, strconv.Itoa(pid)+" "+strings.TrimSpace(string(comm)))
			}
		}
	}
	return out
}
