package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// noServerBound is how long a command with nowhere to go may take in the
// tests: generous for a loaded machine; the aim is under a second.
const noServerBound = 5 * time.Second

// cleanEnv returns the environment without NETMGR_ variables, with HOME
// at home (no token file) and then extra.
func cleanEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NETMGR_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "HOME="+home), extra...)
}

// runTimed runs the binary through the link name with env and returns its
// exit code, stderr and how long it took.
func runTimed(t *testing.T, bin, name string, env []string, args ...string) (int, string, time.Duration) {
	t.Helper()
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, link, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("%s %q: want a failing exit, got %v; stderr:\n%s", name, args, err, stderr.String())
	}
	return exitErr.ExitCode(), stderr.String(), took
}

// TestNoServerGuessedAddress runs netstatus with no address given and
// nothing answering: it fails at once and says what to do.
func TestNoServerGuessedAddress(t *testing.T) {
	if _, err := os.Stat(defaultSocket); err == nil {
		t.Skipf("this machine runs a stub (%s exists); the test needs a machine without one", defaultSocket)
	}
	if conn, err := net.DialTimeout("tcp", defaultAddr, time.Second); err == nil {
		conn.Close()
		t.Skipf("something listens on the default address %s; the test needs it free", defaultAddr)
	}
	bin := netmgrBinary(t)
	home := t.TempDir()
	// A token and a CA get past "who are you" to the default address.
	ca, err := pki.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caDir := t.TempDir()
	if err := ca.Write(caDir); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  []string
		want string // in stderr before the hint
	}{
		{"no credentials", cleanEnv(home), "no way to prove who you are"},
		{"token, default address", cleanEnv(home, envToken+"=abc", envCACert+"="+filepath.Join(caDir, pki.CAFile)),
			"netstatus: list jobs: no netmgr server reachable (tried https://" + defaultAddr + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr, took := runTimed(t, bin, "netstatus", tt.env)
			if code != exitError {
				t.Errorf("exit code = %d, want %d", code, exitError)
			}
			if took > noServerBound {
				t.Errorf("netstatus took %v, want under %v", took, noServerBound)
			}
			if !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "netmgr agent --dev") || !strings.Contains(stderr, envAddr+"=") {
				t.Errorf("stderr =\n%s\nwant %q and the hint (netmgr agent --dev, %s=)", stderr, tt.want, envAddr)
			}
			t.Logf("netstatus gave up after %v", took)
		})
	}
}

// TestNoServerGivenAddress runs netstatus at an address nothing answers:
// it retries as long as told, saying after a second what it waits for.
func TestNoServerGivenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	env := cleanEnv(t.TempDir(), envAddr+"=http://"+dead, envRetryFor+"=2500ms")
	code, stderr, took := runTimed(t, netmgrBinary(t), "netstatus", env)
	if code != exitError {
		t.Errorf("exit code = %d, want %d", code, exitError)
	}
	if took < 1500*time.Millisecond {
		t.Errorf("netstatus gave up after %v, want it to retry for about 2.5s", took)
	}
	want := "netstatus: waiting for a server to answer at http://" + dead + " ("
	if !strings.HasPrefix(stderr, want) || strings.Count(stderr, "waiting for") != 1 {
		t.Errorf("stderr =\n%s\nwant it to start with one line %q...", stderr, want)
	}
	if strings.Contains(stderr, "netmgr agent --dev") {
		t.Errorf("stderr =\n%s\nwant no dev-agent hint for an address given", stderr)
	}
}
