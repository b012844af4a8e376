package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// designPath is DESIGN.md, from this package's directory.
var designPath = filepath.Join(moduleRoot, "DESIGN.md")

// TestDesignNumbers keeps DESIGN.md's numbers of the log format true:
// the snapshot version it says the build writes is fsm.SnapshotVersion,
// and the last row of its command type table is fsm.CommandLevel.
func TestDesignNumbers(t *testing.T) {
	b, err := os.ReadFile(designPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	m := regexp.MustCompile("are `SnapshotVersion` ([0-9]+):").FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no sentence saying the snapshots \"are `SnapshotVersion` N:\"", designPath)
	}
	if got, _ := strconv.Atoi(m[1]); got != fsm.SnapshotVersion {
		t.Errorf("%s says snapshots are version %d; fsm.SnapshotVersion is %d (fsm/snapshot.go)", designPath, got, fsm.SnapshotVersion)
	}
	table := regexp.MustCompile(`(?s)\| type \| command \|.*?\n\n`).FindString(text)
	if table == "" {
		t.Fatalf("%s: no command type table (a header \"| type | command |\")", designPath)
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
	if last != int(fsm.CommandLevel) {
		t.Errorf("%s's command type table ends at %d; fsm.CommandLevel is %d (fsm/command.go): add the new types' rows", designPath, last, fsm.CommandLevel)
	}
}
