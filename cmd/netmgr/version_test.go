package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/buildinfo"
)

func TestPrintVersionGolden(t *testing.T) {
	info := buildinfo.Info{Version: "v1.4.0-2-g1a2b3c4-dirty", Commit: "1a2b3c4d5e6f70819a2b3c4d5e6f70819a2b3c4d", Modified: true, Go: "go1.26.8 linux/amd64"}
	var b bytes.Buffer
	if err := printVersion(&b, info, 25); err != nil {
		t.Fatal(err)
	}
	golden(t, "version.golden", b.Bytes())
}

// netmgr version and netmgr --version print the same lines, with this
// build's command level.
func TestVersionCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "netmgr", "version")
	if code != exitOK {
		t.Fatalf("netmgr version: exit %d, stderr %q", code, errOut)
	}
	re := regexp.MustCompile(`^netmgr \S+\ncommit \S+( \(modified\))?\ncommand level (\d+)\ngo\S+ \S+/\S+\n$`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("netmgr version printed\n%s\nwant it to match %s", out, re)
	}
	if got, want := m[2], strconv.Itoa(int(fsm.CommandLevel)); got != want {
		t.Errorf("command level = %s, want %s", got, want)
	}
	code, out2, errOut := runCLI(t, "netmgr", "--version")
	if code != exitOK || out2 != out {
		t.Errorf("netmgr --version: exit %d, stdout\n%s\nstderr %q; want exit 0 and the same as netmgr version", code, out2, errOut)
	}
}

// TestVersionLinked builds netmgr as the Makefile does, with the version
// and commit set at link time, and checks that the binary reports them.
func TestVersionLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "netmgr")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X main.version=v9.8.7-1-gabcdef0-dirty -X main.commit=abcdef0123456789", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		t.Fatalf("netmgr version: %v", err)
	}
	want := "netmgr v9.8.7-1-gabcdef0-dirty\ncommit abcdef0123456789 (modified)\ncommand level " + strconv.Itoa(int(fsm.CommandLevel)) + "\n"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("netmgr version printed\n%s\nwant it to start\n%s", out, want)
	}
}
