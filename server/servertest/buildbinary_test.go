package servertest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuildBinaryLinksVersion: a binary BuildBinary makes in a git tree
// reports the tree's version, not "devel", even where Go stamps no VCS
// information (a worktree, GOFLAGS=-buildvcs=false).
func TestBuildBinaryLinksVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping under -short: it builds netmgr")
	}
	want, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		t.Skipf("not in a git tree (git describe: %v)", err)
	}
	bin, err := BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("netmgr version: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if w := "netmgr " + strings.TrimSpace(string(want)); first != w {
		t.Errorf("netmgr version says %q, want %q", first, w)
	}
}
