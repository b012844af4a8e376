package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
	"golang.org/x/sys/unix"
)

// ptyUser starts a secure cluster of servers and one stub and makes an OS
// user to run the client commands as, over the stub's user socket, as a
// user of a pool machine does. It skips, saying why, unless the test runs
// as root (which making users needs).
func ptyUser(t *testing.T, servers int) (*servertest.ProcCluster, osUser) {
	c, u, _ := ptyUserClient(t, servers)
	return c, u
}

// ptyUserClient is ptyUser with a client acting as root on the pool,
// which may read every job.
func ptyUserClient(t *testing.T, servers int) (*servertest.ProcCluster, osUser, *client.Client) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes an OS user to run interactive jobs as")
	}
	dir := t.TempDir()
	openToEveryone(t, dir)
	openToEveryone(t, filepath.Dir(netmgrBinary(t)))
	c, cl := procCluster(t, dir, servers, 1)
	u := newOSUser(t, "pty")
	return c, u, cl
}

// userCmd is the netmgr binary run as u with args, pointed at c.
func userCmd(t *testing.T, c *servertest.ProcCluster, u osUser, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(netmgrBinary(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + u.home, "USER=" + u.name, "TERM=xterm", "NETMGR_RETRY_FOR=20s"}, c.Env()...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	return cmd
}

// screen collects what a terminal shows.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(b)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Len is how many bytes the screen holds.
func (s *screen) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Len()
}

// waitFor waits until the screen shows want after position from, and
// returns the position just past it.
func (s *screen) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	pos := -1
	testwait.Until(t, 30*time.Second, fmt.Sprintf("the terminal shows %q", want), func() (bool, string) {
		out := s.String()
		if i := strings.Index(out[min(from, len(out)):], want); i >= 0 {
			pos = from + i + len(want)
			return true, ""
		}
		return false, fmt.Sprintf("%q", out[min(from, len(out)):])
	})
	return pos
}

// startOnTerminal starts cmd on a new pseudo-terminal of rows by cols,
// as a login session's process, and returns the terminal's master and
// slave and what it shows.
func startOnTerminal(t *testing.T, cmd *exec.Cmd, rows, cols uint16) (*os.File, *os.File, *screen) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close(); _ = tty.Close() })
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty = true, true
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, ptmx) }()
	return ptmx, tty, scr
}

// exitCode waits for cmd and returns its exit code. Its output must not
// be a pipe still being read (StdoutPipe): Wait closes that, and what
// the command wrote last may not have been read yet.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("wait for %v: %v", cmd.Args, err)
		}
		return 0
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%v did not exit within a minute", cmd.Args)
		return -1
	}
}

// TestPtyE2E runs a shell under netexec --pty on a real terminal: typing,
// the window size at start and after a resize, Ctrl-C of a running
// sleep, the exit status, and the terminal restored afterwards.
func TestPtyE2E(t *testing.T) {
	t.Parallel()
	c, u := ptyUser(t, 3)
	cmd := userCmd(t, c, u, "exec", "--pty", "/bin/sh")
	ptmx, tty, scr := startOnTerminal(t, cmd, 30, 100)
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	typeIn := func(s string) {
		t.Helper()
		if _, err := ptmx.Write([]byte(s)); err != nil {
			t.Fatalf("type %q: %v", s, err)
		}
	}
	pos := scr.waitFor(t, 0, "$ ")
	typeIn("stty size\r")
	pos = scr.waitFor(t, pos, "30 100")
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 41, Cols: 123}); err != nil {
		t.Fatal(err)
	}
	// The resize reaches the job after netexec's SIGWINCH: ask until it has.
	testwait.Until(t, 30*time.Second, "stty size says 41 123", func() (bool, string) {
		typeIn("stty size\r")
		ok := strings.Contains(scr.String()[pos:], "41 123")
		return ok, scr.String()[pos:]
	})
	pos = len(scr.String())
	typeIn("echo typed-$((6*7))\r")
	pos = scr.waitFor(t, pos, "typed-42")
	typeIn("sleep 300; echo slept\r")
	pos = scr.waitFor(t, pos, "slept\r\n")
	typeIn("\x03") // Ctrl-C, through the job's line discipline
	pos = scr.waitFor(t, pos, "$ ")
	typeIn("echo after-$((1+1))\r")
	pos = scr.waitFor(t, pos, "after-2")
	if strings.Contains(scr.String(), "\nslept") {
		t.Fatalf("the sleep ran to its end: Ctrl-C did not reach it:\n%s", scr.String())
	}
	typeIn("exit 7\r")
	if code := exitCode(t, cmd); code != 7 {
		t.Fatalf("netexec --pty exited %d, want the job's 7; the terminal showed:\n%s", code, scr.String())
	}
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Fatalf("terminal not restored: lflag %#x iflag %#x oflag %#x, was %#x %#x %#x",
			after.Lflag, after.Iflag, after.Oflag, before.Lflag, before.Iflag, before.Oflag)
	}
}

// TestInteractivePipesE2E passes binary data through netexec -i cat and
// checks every byte, the end of input, stderr and the exit status.
func TestInteractivePipesE2E(t *testing.T) {
	t.Parallel()
	c, u := ptyUser(t, 3)
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	for i := range 256 {
		data[i] = byte(i) // every byte value, NUL and ^D and ^C included
	}
	cmd := userCmd(t, c, u, "exec", "-i", "/bin/cat")
	cmd.Stdin = bytes.NewReader(data)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("netexec -i cat exited %d: %s", code, errOut.String())
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("netexec -i cat gave %d bytes, not the %d sent (equal: %v); stderr: %s", out.Len(), len(data), bytes.Equal(out.Bytes(), data), errOut.String())
	}

	cmd = userCmd(t, c, u, "exec", "-i", "/bin/sh", "-c", "wc -c; echo to-stderr >&2; exit 3")
	cmd.Stdin = strings.NewReader("12345")
	out.Reset()
	errOut.Reset()
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd); code != 3 {
		t.Fatalf("netexec -i exited %d, want the job's 3: %s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != "5" {
		t.Fatalf("stdout = %q, want wc's 5", got)
	}
	if !strings.Contains(errOut.String(), "to-stderr") {
		t.Fatalf("stderr = %q, want the job's to-stderr", errOut.String())
	}
}

// jobIDIn reads the job id from netexec's "job NAME.OWNER id N
// submitted" line.
func jobIDIn(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no job id in netexec's output %q", out)
	}
	return m[1]
}

// runningAs waits until job id runs, as u sees it with netstatus.
func runningAs(t *testing.T, c *servertest.ProcCluster, u osUser, id string) {
	t.Helper()
	testwait.Until(t, 60*time.Second, "job "+id+" runs", func() (bool, string) {
		_, out := runAs(t, c, u, "status", id)
		return strings.Contains(out, "running"), out
	})
}

// TestShellE2E enters a running job with netmgr shell: a command with
// plain streams sees the job's environment, user, directory and cgroup; a
// login shell on a terminal takes typing and exits with its status;
// another user is refused; a shell is killed with its instance.
func TestShellE2E(t *testing.T) {
	t.Parallel()
	c, u, cl := ptyUserClient(t, 3)
	other := newOSUser(t, "ptyo")
	code, out := runAs(t, c, u, "exec", "--env", "MARK=in-the-job", "/bin/sleep", "600")
	if code != 0 {
		t.Fatalf("netexec: %d %s", code, out)
	}
	id := jobIDIn(t, out)
	runningAs(t, c, u, id)
	jobID, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	shellEvents := func(n int) []string { // n shells opened and closed by u
		var out []string
		for range n {
			out = append(out, "session-opened shell opened by "+u.name, "session-closed shell closed by "+u.name)
		}
		return out
	}

	code, out = runAs(t, c, u, "shell", id, "--", "/bin/sh", "-c", `echo "mark=$MARK user=$(id -un) dir=$(pwd)"; cat /proc/self/cgroup; exit 4`)
	if code != 4 {
		t.Fatalf("netmgr shell exited %d, want the command's 4: %s", code, out)
	}
	want := "mark=in-the-job user=" + u.name + " dir="
	if !strings.Contains(out, want) || !strings.Contains(out, "/"+id+".0.1") {
		t.Fatalf("netmgr shell's command printed %q; want %q and the job's directory %s.0.1", out, want, id)
	}
	if jobCgroup := regexp.MustCompile(`netmgr/[^/\s]+/` + id + `\.0\.1`); cgroupsWork(t) && !jobCgroup.MatchString(out) {
		t.Fatalf("the command is not in the job's cgroup: %s", out)
	}
	waitSessionEvents(t, cl, jobID, shellEvents(1))

	code, out = runAs(t, c, other, "shell", id, "--", "/bin/true")
	if code == 0 || !strings.Contains(out, "only its owner or an admin") {
		t.Fatalf("another user's netmgr shell: exit %d, %q; want a refusal naming the owner rule", code, out)
	}

	cmd := userCmd(t, c, u, "shell", id)
	ptmx, _, scr := startOnTerminal(t, cmd, 24, 80)
	pos := scr.waitFor(t, 0, "$ ")
	_, _ = ptmx.Write([]byte("echo who=$(id -un) tty=$(tty)\r"))
	scr.waitFor(t, pos, "who="+u.name+" tty=/dev/pts/")
	_, _ = ptmx.Write([]byte("exit 5\r"))
	if code := exitCode(t, cmd); code != 5 {
		t.Fatalf("netmgr shell on a terminal exited %d, want 5:\n%s", code, scr.String())
	}
	waitSessionEvents(t, cl, jobID, shellEvents(2)) // nothing of the refused user's

	shell := userCmd(t, c, u, "shell", id, "--", "/bin/sleep", "600")
	var shellOut bytes.Buffer
	shell.Stdout, shell.Stderr = &shellOut, &shellOut
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shell.Process.Kill() })
	// Killing the job once the shell's sleep runs in it ends the shell.
	testwait.Until(t, 30*time.Second, "the shell's sleep runs", func() (bool, string) {
		b, _ := exec.Command("pgrep", "-u", u.name, "-f", "^/bin/sleep 600$").Output()
		return len(strings.Fields(string(b))) >= 2, string(b)
	})
	if code, out := runAs(t, c, u, "kill", id); code != 0 {
		t.Fatalf("netkill: %d %s", code, out)
	}
	if code := exitCode(t, shell); code != 128+9 && code != 128+15 {
		t.Fatalf("netmgr shell exited %d after its job was killed, want 137 or 143: %s", code, shellOut.String())
	}
	waitSessionEvents(t, cl, jobID, shellEvents(3))
}

// cgroupsWork reports whether the stubs here put jobs in cgroups: a
// writable cgroup v2 tree.
func cgroupsWork(t *testing.T) bool {
	t.Helper()
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC && unix.Access("/sys/fs/cgroup", unix.W_OK) == nil
}

// relayedBy returns the indexes of the servers whose logs say they
// relayed a session.
func relayedBy(t *testing.T, c *servertest.ProcCluster) []int {
	t.Helper()
	var out []int
	for i, p := range c.Servers {
		b, err := os.ReadFile(p.LogPath)
		if err == nil && bytes.Contains(b, []byte(`msg="session relayed"`)) {
			out = append(out, i)
		}
	}
	return out
}

// TestSessionSurvivesServerKillE2E streams 6 MB each way through
// netexec -i cat and SIGKILLs the server the session goes through in the
// middle: the client goes on through another server and every byte comes
// back once, in order.
func TestSessionSurvivesServerKillE2E(t *testing.T) {
	t.Parallel()
	c, u := ptyUser(t, 3)
	data := make([]byte, 6<<20)
	_, _ = rand.Read(data)
	cmd := userCmd(t, c, u, "exec", "-i", "/bin/cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Not a StdoutPipe: Wait closes that once netexec exits, dropping
	// what it wrote last and the test had not read yet (up to a pipe's
	// 64 KiB, which once read as a lost tail). Wait waits for the copy
	// into out to reach the end instead.
	out := &screen{}
	cmd.Stdout = out
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	received := out.Len
	half := len(data) / 2
	if _, err := stdin.Write(data[:half]); err != nil {
		t.Fatalf("write the first half: %v (%s)", err, errOut.String())
	}
	// Bytes flow both ways: the first half is on its way back.
	testwait.Until(t, 60*time.Second, "a first MB comes back", func() (bool, string) {
		return received() >= 1<<20, fmt.Sprint(received())
	})
	relays := relayedBy(t, c)
	if len(relays) != 1 {
		t.Fatalf("servers that relayed the session: %v, want exactly one", relays)
	}
	if err := c.KillServer(relays[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write(data[half:]); err != nil {
		t.Fatalf("write the second half after the kill: %v (%s)", err, errOut.String())
	}
	_ = stdin.Close()
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("netexec -i cat exited %d after its server was killed: %s", code, errOut.String())
	}
	got := []byte(out.String())
	if !bytes.Equal(got, data) {
		n := 0
		for n < min(len(got), len(data)) && got[n] == data[n] {
			n++
		}
		t.Fatalf("got %d bytes back of %d; the first difference at %d", len(got), len(data), n)
	}
	if now := relayedBy(t, c); len(now) < 2 {
		t.Fatalf("servers that relayed the session: %v; want another after server %d was killed", now, relays[0])
	}
}

// TestDetachAttachE2E loses netexec -i in the middle of a job's session,
// takes the session back with netmgr attach, and lets another job's grace
// pass with no client, after which the job gets SIGHUP.
func TestDetachAttachE2E(t *testing.T) {
	t.Parallel()
	c, u, cl := ptyUserClient(t, 3)
	cmd := userCmd(t, c, u, "exec", "-i", "--detach-grace", "60s", "/bin/sh", "-c", "read a; echo got-$a; read b; echo second-$b; exit 6")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &screen{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, "first\n")
	out.waitFor(t, 0, "got-first")
	_ = cmd.Process.Kill() // the laptop's lid closes
	_ = cmd.Wait()

	attach := userCmd(t, c, u, "attach", "1")
	attach.Stdin = strings.NewReader("again\n")
	again := &screen{}
	attach.Stdout, attach.Stderr = again, again
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, attach); code != 6 {
		t.Fatalf("netmgr attach exited %d, want the job's 6: %s", code, again.String())
	}
	if !strings.Contains(again.String(), "second-again") {
		t.Fatalf("netmgr attach printed %q, want the job's answer to what it sent", again.String())
	}
	waitSessionEvents(t, cl, 1, []string{
		"session-opened session opened by " + u.name,
		"session-attached session attached by " + u.name,
		"session-closed session closed by " + u.name,
	})

	hup := userCmd(t, c, u, "exec", "-i", "--detach-grace", "1s", "/bin/sh", "-c", "trap 'exit 9' HUP; echo ready; while :; do sleep 0.2; done")
	hup.Stdin = strings.NewReader("")
	hupOut := &screen{}
	hup.Stdout, hup.Stderr = hupOut, hupOut
	if err := hup.Start(); err != nil {
		t.Fatal(err)
	}
	hupOut.waitFor(t, 0, "ready")
	_ = hup.Process.Kill()
	_ = hup.Wait()
	testwait.Until(t, 30*time.Second, "job 2 ends by its SIGHUP trap, exit 9", func() (bool, string) {
		j, err := cl.Job(context.Background(), "2")
		if err != nil || len(j.Instances) == 0 {
			return false, fmt.Sprint(err)
		}
		in := j.Instances[0]
		return in.State != client.InstanceRunning && in.ExitCode == 9, fmt.Sprintf("%s exit %d", in.State, in.ExitCode)
	})
}

// waitSessionEvents waits until the events of job show its session's
// events as want ("KIND DETAIL"), in that order and no others: a close
// recorded twice (two relays whose connections ended together, which
// the CI run of stop 42 saw once before the stub told only the first)
// fails it.
func waitSessionEvents(t *testing.T, cl *client.Client, job uint64, want []string) {
	t.Helper()
	testwait.Until(t, 30*time.Second, fmt.Sprintf("the events of job %d show %q", job, want), func() (bool, string) {
		evs, err := cl.Events(context.Background(), 0)
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range evs {
			line := e.Kind + " " + e.Detail
			if e.Job != job || !strings.HasPrefix(e.Kind, "session-") {
				continue
			}
			got = append(got, line)
		}
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}
