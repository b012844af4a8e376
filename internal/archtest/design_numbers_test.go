package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// designPath is DESIGN.md and changesPath CHANGES.md, from this
// package's directory.
var (
	designPath  = filepath.Join(moduleRoot, "DESIGN.md")
	changesPath = filepath.Join(moduleRoot, "CHANGES.md")
)

// maxDesignLines is how long DESIGN.md may grow: it is the architecture
// and the correctness argument; a feature's design belongs in its
// package's doc.go, and history in CHANGES.md (issue 35, point 4).
const maxDesignLines = 800

// readText returns the text of the file at path, failing t if it cannot.
func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lastTableNumber finds the table under header in text and returns the
// largest number its rows' first cells name ("7", "7-15", "1, 2").
func lastTableNumber(t *testing.T, path, text, header string) int {
	t.Helper()
	table := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(header) + `.*?\n\n`).FindString(text + "\n\n")
	if table == "" {
		t.Fatalf("%s: no table with the header %q", path, header)
	}
	rows := regexp.MustCompile(`(?m)^\| (\d+)(?:-(\d+)|, (\d+))? \| `).FindAllStringSubmatch(table, -1)
	last := 0
	for _, r := range rows {
		for _, g := range r[1:] {
			if n, err := strconv.Atoi(g); err == nil && n > last {
				last = n
			}
		}
	}
	return last
}

// TestDesignNumbers keeps DESIGN.md's numbers of the log format true:
// the snapshot version it says the build writes is fsm.SnapshotVersion,
// and the command level it says the build applies is fsm.CommandLevel.
func TestDesignNumbers(t *testing.T) {
	text := readText(t, designPath)
	m := regexp.MustCompile("are `SnapshotVersion` ([0-9]+):").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no sentence saying the snapshots \"are `SnapshotVersion` N:\"", designPath)
	}
	if got, _ := strconv.Atoi(m[1]); got != fsm.SnapshotVersion {
		t.Errorf("%s says snapshots are version %d; fsm.SnapshotVersion is %d (fsm/snapshot.go)", designPath, got, fsm.SnapshotVersion)
	}
	m = regexp.MustCompile(`command\s+level\s+([0-9]+)\*\*\s+\(` + "`fsm.CommandLevel`").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no sentence saying the build applies \"**command level N** (`fsm.CommandLevel`\"", designPath)
	}
	if got, _ := strconv.Atoi(m[1]); got != int(fsm.CommandLevel) {
		t.Errorf("%s says the build is at command level %d; fsm.CommandLevel is %d (fsm/command.go)", designPath, got, fsm.CommandLevel)
	}
}

// TestChangesNumbers keeps CHANGES.md's history up to date: its command
// type table ends at fsm.CommandLevel and its snapshot version table at
// fsm.SnapshotVersion.
func TestChangesNumbers(t *testing.T) {
	text := readText(t, changesPath)
	if last := lastTableNumber(t, changesPath, text, "| type | command |"); last != int(fsm.CommandLevel) {
		t.Errorf("%s's command type table ends at %d; fsm.CommandLevel is %d (fsm/command.go): add the new types' rows", changesPath, last, fsm.CommandLevel)
	}
	if last := lastTableNumber(t, changesPath, text, "| version | what it added |"); last != fsm.SnapshotVersion {
		t.Errorf("%s's snapshot version table ends at %d; fsm.SnapshotVersion is %d (fsm/snapshot.go): add the new version's row", changesPath, last, fsm.SnapshotVersion)
	}
}

// TestDesignLength keeps DESIGN.md the architecture document it is meant
// to be: at most maxDesignLines lines.
func TestDesignLength(t *testing.T) {
	text := readText(t, designPath)
	n := strings.Count(text, "\n")
	if len(text) > 0 && text[len(text)-1] != '\n' {
		n++
	}
	if n > maxDesignLines {
		t.Errorf("%s has %d lines, more than %d: move feature design into the owning package's doc.go and history into CHANGES.md", designPath, n, maxDesignLines)
	}
}
