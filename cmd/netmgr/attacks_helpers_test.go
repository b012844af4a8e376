package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// What the attack test reads of the processes: the refusals they counted
// on /metrics, the lines they logged, and requests whose exact status
// matters. And rogue processes of the netmgr binary, started the way an
// attacker would start them.

// deniedMetric is the counter of refused requests servers and stubs keep.
const deniedMetric = "netmgr_requests_denied_total"

// metric returns the value of the sample name{labels} on p's /metrics, 0
// when p has none (a counter never incremented has no sample).
func metric(t *testing.T, c *servertest.ProcCluster, p *servertest.Proc, name, labels string) float64 {
	t.Helper()
	resp, err := c.HTTPClient().Get(p.URL() + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", p.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", p.Name, resp.Status)
	}
	want := name + "{" + labels + "} "
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s on %s: %q: %v", name, p.Name, v, err)
			}
			return f
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape %s: %v", p.Name, err)
	}
	return 0
}

// denied is how many requests the processes ps refused for reason, all
// of them together: a refusal is counted where it was decided, which for
// a request a follower forwards is the leader, whichever server that is.
func denied(t *testing.T, c *servertest.ProcCluster, ps []*servertest.Proc, reason string) int {
	t.Helper()
	n := 0.0
	for _, p := range ps {
		n += metric(t, c, p, deniedMetric, `reason="`+reason+`"`)
	}
	return int(n)
}

// logged returns the lines of the logs of ps that hold every one of subs.
func logged(t *testing.T, ps []*servertest.Proc, subs ...string) []string {
	t.Helper()
	var out []string
	for _, p := range ps {
		out = append(out, linesWith(t, p.LogPath, subs...)...)
	}
	return out
}

// linesWith returns the lines of the file at path that hold every one of
// subs.
func linesWith(t *testing.T, path string, subs ...string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// grepLines returns the lines of text that hold sub.
func grepLines(text, sub string) string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// watch polls until progress reports that the attack has been tried
// enough, failing the test at timeout; at every poll, before progress, it
// checks never, which fails the test the moment the attack succeeded.
// Waiting for the attacker's own tries to show (refusals counted, log
// lines) rather than for a span of time is what makes "never" mean
// something on a slow machine.
func watch(t *testing.T, timeout time.Duration, what string, progress func() (bool, string), never func()) {
	t.Helper()
	testwait.Until(t, timeout, what, func() (bool, string) {
		never()
		return progress()
	})
}

// call sends one request with hc, JSON body in (nil for none) and headers
// hdr, and returns the status and the answer's body. It does not follow a
// refusal anywhere: the status is the one the attacked process gave.
func call(t *testing.T, hc *http.Client, method, url string, in any, hdr map[string]string) (int, string) {
	t.Helper()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(data))
}

// runNetmgr runs the netmgr binary as the test's user with env added to
// a bare environment (no token file under HOME) and returns the exit code
// and the output.
func runNetmgr(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, netmgrBinary(t), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "NETMGR_RETRY_FOR=10s"}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return exitErr.ExitCode(), out.String()
	}
	t.Fatalf("run netmgr %s: %v\n%s", strings.Join(args, " "), err, out.String())
	return 0, ""
}

// rogue is a netmgr process an attacker started.
type rogue struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startRogue starts the netmgr binary with args, its output in a log
// file under dir, and stops it at cleanup (printing its log if the test
// failed).
func startRogue(t *testing.T, dir, name string, args ...string) *rogue {
	t.Helper()
	r := &rogue{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(netmgrBinary(t), args...)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = r.cmd.Wait()
		f.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			data, _ := os.ReadFile(r.log)
			t.Logf("==== %s log ====\n%s", name, data)
		}
	})
	return r
}

// stop ends the rogue: SIGTERM, SIGKILL after a grace. Safe to call twice.
func (r *rogue) stop() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// running fails the test if the rogue has exited: an attacker's process
// that died proves nothing about the defences.
func (r *rogue) running(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
		data, _ := os.ReadFile(r.log)
		t.Fatalf("%s exited; the attack needs it running. Its log:\n%s", r.name, data)
	default:
	}
}

// lines returns the rogue's log lines holding every one of subs.
func (r *rogue) lines(t *testing.T, subs ...string) []string {
	t.Helper()
	return linesWith(t, r.log, subs...)
}
