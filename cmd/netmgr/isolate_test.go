package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// isolateProc cuts process pid, which listens on the given host:port
// addresses (TCP, and UDP for gossip), off the network: nothing reaches
// its ports, its UDP socket sends nothing, the TCP connections it holds
// are destroyed (ss -K), and it is moved into a cgroup of its own whose
// new sockets send nothing (iptables' cgroup match). Processes it started
// earlier (a stub's supervisor host, its jobs) stay where they were. It
// skips the test, saying why, where that cannot be done (not root, no
// cgroup v2 hierarchy, no iptables cgroup match), and undoes the rules at
// cleanup.
func isolateProc(t *testing.T, pid int, addrs ...string) {
	t.Helper()
	name := ownCgroup(t, pid)
	rules := [][]string{{"OUTPUT", "-m", "cgroup", "--path", name, "-j", "DROP"}}
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatalf("address %q: %v", a, err)
		}
		rules = append(rules,
			[]string{"INPUT", "-p", "tcp", "--dport", port, "-j", "DROP"},
			[]string{"INPUT", "-p", "udp", "--dport", port, "-j", "DROP"},
			[]string{"OUTPUT", "-p", "udp", "--sport", port, "-j", "DROP"})
	}
	addRules(t, rules)
	moveAndCut(t, pid, name)
}

// cutFromPorts stops process pid from reaching the TCP ports of the given
// host:port addresses (a stub from the servers' APIs), while it still
// reaches everything else (the other stubs): its new sockets' packets to
// those ports are dropped, and the connections it holds are destroyed
// (ss -K). The returned heal removes the rules; cleanup removes them if
// heal was not called. It skips the test, saying why, where isolateProc
// would.
func cutFromPorts(t *testing.T, pid int, addrs ...string) (heal func()) {
	t.Helper()
	name := ownCgroup(t, pid)
	var rules [][]string
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatalf("address %q: %v", a, err)
		}
		rules = append(rules, []string{"OUTPUT", "-m", "cgroup", "--path", name, "-p", "tcp", "--dport", port, "-j", "DROP"})
	}
	remove := addRules(t, rules)
	moveAndCut(t, pid, name)
	return remove
}

// ownCgroup makes a cgroup for process pid, removed at cleanup, and
// returns its path below the hierarchy's root, for iptables' cgroup
// match; it skips the test where that cannot be done.
func ownCgroup(t *testing.T, pid int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cutting a process off the network needs root (iptables, cgroups)")
	}
	root := cgroup2Root()
	if root == "" {
		t.Skip("no cgroup v2 hierarchy mounted: cannot match one process's packets")
	}
	name := fmt.Sprintf("netmgr-test-isolated-%d", pid)
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("make cgroup %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	return name
}

// addRules inserts the iptables rules, skipping the test when the first
// cannot be (no cgroup match), and returns a func that removes them,
// which cleanup calls too if nothing did before.
func addRules(t *testing.T, rules [][]string) (remove func()) {
	t.Helper()
	var once sync.Once
	remove = func() {
		once.Do(func() {
			for _, r := range rules {
				if out, err := exec.Command("iptables", append([]string{"-D"}, r...)...).CombinedOutput(); err != nil {
					t.Errorf("remove iptables rule %v: %v: %s", r, err, out)
				}
			}
		})
	}
	for i, r := range rules {
		if out, err := exec.Command("iptables", append([]string{"-I"}, r...)...).CombinedOutput(); err != nil {
			rules = rules[:i]
			remove()
			if i == 0 {
				t.Skipf("iptables cannot match cgroups here: %v: %s", err, out)
			}
			t.Fatalf("iptables -I %v: %v: %s", r, err, out)
		}
	}
	t.Cleanup(remove)
	return remove
}

// moveAndCut moves process pid into the cgroup name (back to the root at
// cleanup) and destroys the TCP connections it holds, whose sockets the
// cgroup match would not see.
func moveAndCut(t *testing.T, pid int, name string) {
	t.Helper()
	root := cgroup2Root()
	t.Cleanup(func() {
		// Back to the root, so the cgroup can go (if it still runs).
		_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	})
	if err := os.WriteFile(filepath.Join(root, name, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("move %d into %s: %v", pid, name, err)
	}
	killSockets(t, pid)
}

// killSockets destroys the established TCP connections of process pid.
func killSockets(t *testing.T, pid int) {
	t.Helper()
	out, err := exec.Command("ss", "-tnpH", "state", "established").Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	mark := fmt.Sprintf("pid=%d,", pid)
	for line := range strings.Lines(string(out)) {
		fs := strings.Fields(line)
		if !strings.Contains(line, mark) || len(fs) < 4 {
			continue
		}
		local, peer := fs[2], fs[3]
		if out, err := exec.Command("ss", "-K", "-tn", "src", local, "dst", peer).CombinedOutput(); err != nil {
			t.Fatalf("ss -K %s %s: %v: %s", local, peer, err, out)
		}
	}
}

// cgroup2Root returns where the cgroup v2 hierarchy is mounted, or "".
func cgroup2Root() string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 3 && fs[2] == "cgroup2" {
			return fs[1]
		}
	}
	return ""
}

// watchGone polls, every 10 ms in the background, until process pid no
// longer exists (or is a zombie, ended but not yet reaped), and sends when
// it was first seen gone.
func watchGone(pid int, timeout time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || procState(string(b)) == "Z" {
				ch <- time.Now()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(ch)
	}()
	return ch
}

// procState returns the state field of a /proc/PID/stat line.
func procState(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+3 > len(stat) {
		return ""
	}
	return stat[i+2 : i+3]
}
