package supervisor

import (
	"testing"
	"time"
)

// TestLowerLease: a stub starting again lowers the lease file to its own
// assumed lease, never raises it, and leaves a missing file missing.
func TestLowerLease(t *testing.T) {
	dir := t.TempDir()
	read := func() time.Duration {
		t.Helper()
		var rec leaseRecord
		if err := readJSONFile(LeasePath(dir), &rec); err != nil {
			t.Fatal(err)
		}
		return time.Duration(rec.ValidUntilBootNS)
	}
	if had, err := LowerLease(dir, 5*time.Second); had || err != nil {
		t.Fatalf("no file: had %v, err %v; want false, nil", had, err)
	}
	if err := WriteLease(dir, 100*time.Second, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if had, err := LowerLease(dir, 103*time.Second); !had || err != nil {
		t.Fatalf("restart lease: had %v, err %v", had, err)
	}
	if got := read(); got != 103*time.Second {
		t.Errorf("lease file ends at %v, want lowered to 1m43s", got)
	}
	if _, err := LowerLease(dir, 200*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != 103*time.Second {
		t.Errorf("lease file ends at %v after a later deadline, want it kept at 1m43s (never raised)", got)
	}
}
