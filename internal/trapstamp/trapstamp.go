// Package trapstamp reads the times a test job's shell traps record, for
// the tests of time limits and their warning in stub, server and
// cmd/netmgr: a job writes `date +%s.%N` into a file of its directory
// when a signal reaches it, and the test reads it back.
package trapstamp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Read returns the time the job wrote with date +%s.%N into file name of
// dir, failing the test when the file is missing or holds something else.
func Read(t testing.TB, dir, name string) time.Time {
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
