package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/trapstamp"
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
	links := commandLinks(t, dir, bin, "netexec", "netstatus")
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
	gap := trapstamp.Read(t, work, "termed").Sub(trapstamp.Read(t, work, "warned"))
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
