package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestE2ELimitsWarnThenKill runs netexec --time 3s --signal USR1@2 against
// netmgr server and stub processes: the job's traps stamp the warning and
// the TERM about the lead apart, netexec --wait done reports the kill, and
// netstatus shows killed(timeout).
func TestE2ELimitsWarnThenKill(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"netexec", "netstatus"} {
		if err := os.Symlink(bin, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(work, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	c, _ := procCluster(t, dir, 1, 1)
	r := &e2eRunner{links: links, env: c.Env(), dir: work}

	script := `trap "date +%s.%N > ` + work + `/warned" USR1; trap "date +%s.%N > ` + work + `/termed; exit 7" TERM; ` +
		`while :; do sleep 3600 & wait; done`
	res := r.run(t, "netexec", "--name", "ckpt", "--time", "3s", "--signal", "USR1@2", "--wait", "done", "/bin/sh", "-c", script)
	res.wantCode(t, 1)
	if !strings.Contains(res.stdout, "timeout") {
		t.Errorf("netexec --wait done says %q, want the timeout named", res.stdout)
	}
	gap := e2eStamp(t, work, "termed").Sub(e2eStamp(t, work, "warned"))
	if gap < 1500*time.Millisecond || gap > 2500*time.Millisecond {
		t.Errorf("the TERM came %v after the warning, want about the 2 s lead", gap)
	}
	status := r.run(t, "netstatus", "-j")
	status.wantCode(t, 0)
	if !strings.Contains(status.stdout, "killed(timeout)") {
		t.Errorf("netstatus -j shows\n%s\nwant ckpt killed(timeout)", status.stdout)
	}
	refused := r.run(t, "netexec", "--signal", "USR1@60", "/bin/true")
	if refused.code == 0 || !strings.Contains(refused.stderr, "signal= warns 1m before the time limit, but the job has none") {
		t.Errorf("a warning without a time limit: %s\nwant it refused with the reason", refused)
	}
}

// e2eStamp reads a time a job wrote with date +%s.%N into file name of dir.
func e2eStamp(t *testing.T, dir, name string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("the job's trap left no %s: %v", name, err)
	}
	secs, frac, _ := strings.Cut(strings.TrimSpace(string(b)), ".")
	s, err1 := strconv.ParseInt(secs, 10, 64)
	ns, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s holds %q, not a date +%%s.%%N", name, b)
	}
	return time.Unix(s, ns)
}
