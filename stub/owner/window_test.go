package owner_test

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/stub/owner"
)

// TestWindowCloses runs a watch whose only window closes two seconds into
// the test: the machine is awake until then and asleep after.
func TestWindowCloses(t *testing.T) {
	now := time.Now().In(time.UTC)
	closes := now.Add(2 * time.Second)
	window := now.Add(-time.Minute).Format("15:04:05") + "-" + closes.Format("15:04:05")
	w, err := owner.New(owner.Config{Available: []string{window}, Location: time.UTC, Interval: 20 * time.Millisecond}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if v := w.Verdict(); v != "" {
		t.Fatalf("inside %s at %s: verdict %q, want awake", window, now.Format("15:04:05"), v)
	}
	run(t, w)
	waitVerdict(t, w, "outside window")
	if time.Now().Before(closes.Truncate(time.Second)) {
		t.Errorf("asleep at %s, before the window closed at %s", time.Now().Format("15:04:05.000"), closes.Format("15:04:05"))
	}
}
