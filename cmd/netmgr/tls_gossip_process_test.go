package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
)

// logLines collects a process's stderr line by line.
type logLines struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *logLines) has(subs ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			return true
		}
	}
	return false
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// A server and a stub process read their gossip keyring again on SIGHUP:
// a key added to the file is installed, and a broken file is refused
// while the process keeps its keys and runs on.
func TestSIGHUPReloadsTheGossipKeyring(t *testing.T) {
	bin := netmgrBinary(t)
	for _, role := range []string{"server", "stub"} {
		t.Run(role, func(t *testing.T) {
			dir := t.TempDir()
			keyring := filepath.Join(dir, "keyring")
			if code, _, stderr := runCLI(t, "netmgr", "tls", "gossip-key", "create", keyring); code != exitOK {
				t.Fatalf("create keyring: %s", stderr)
			}
			args := []string{role, "--insecure", "--gossip-keyring", keyring, "--name", role + "1",
				"--data-dir", filepath.Join(dir, "data"), "--http", "127.0.0.1:0", "--gossip", "127.0.0.1:0"}
			if role == "server" {
				args = append(args, "--raft", "127.0.0.1:0")
			} else {
				args = append(args, "--exec-dir", filepath.Join(dir, "exec"), "--socket", "", "--join", "127.0.0.1:1")
			}
			cmd := exec.Command(bin, args...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			logs := &logLines{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					logs.mu.Lock()
					logs.lines = append(logs.lines, sc.Text())
					logs.mu.Unlock()
				}
			}()
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(15 * time.Second):
					_ = cmd.Process.Kill()
					<-done
				}
				_ = cmd.Wait()
				if t.Failed() {
					t.Logf("%s log:\n%s", role, logs)
				}
			})
			wait := func(what string, subs ...string) {
				t.Helper()
				testwait.For(t, 20*time.Second, what, func() bool { return logs.has(subs...) })
			}
			wait("the process to start", role+" started")

			if code, _, stderr := runCLI(t, "netmgr", "tls", "gossip-key", "add", keyring); code != exitOK {
				t.Fatalf("add key: %s", stderr)
			}
			keys, err := pki.ReadKeyring(keyring)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			wait("the new key installed", "gossip keyring reloaded", pki.KeyID(keys[1]))

			if err := os.WriteFile(keyring, []byte("not a key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			wait("the broken file refused", "SIGHUP", "old ones stay in use", "line 1: bad gossip keyring")
			select {
			case <-done:
				t.Fatal("the process ended after a refused reload")
			default:
			}
		})
	}
}
