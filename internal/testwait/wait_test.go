package testwait

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps the first Fatalf instead of ending
// the goroutine, so the failure path can be checked.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	if r.failed == "" {
		r.failed = fmt.Sprintf(format, args...)
	}
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	For(t, 5*time.Second, "the third call", func() bool {
		calls++
		return calls == 3
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

func TestUntilFailsNamingWhatAndTheLastState(t *testing.T) {
	r := &recorder{TB: t}
	n := 0
	start := time.Now()
	Until(r, 50*time.Millisecond, "the count to reach 10", func() (bool, string) {
		n++
		return false, "count " + strconv.Itoa(n)
	})
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the 50ms timeout", elapsed)
	}
	want := "timed out after 50ms waiting for the count to reach 10 (last seen: count " + strconv.Itoa(n) + ")"
	if r.failed != want {
		t.Errorf("failure message:\n got %q\nwant %q", r.failed, want)
	}
}

func TestForFailureWithoutState(t *testing.T) {
	r := &recorder{TB: t}
	For(r, 20*time.Millisecond, "never", func() bool { return false })
	if want := "timed out after 20ms waiting for never"; r.failed != want {
		t.Errorf("failure message %q, want %q", r.failed, want)
	}
}

func TestPoll(t *testing.T) {
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a false condition returned true")
	}
	if !Poll(time.Second, func() bool { return true }) {
		t.Error("Poll of a true condition returned false")
	}
}

func TestConditionCheckedAtTheDeadline(t *testing.T) {
	// A condition that turns true during the last sleep is seen: cond is
	// called once more when the deadline has passed.
	start := time.Now()
	ok := Poll(30*time.Millisecond, func() bool { return time.Since(start) >= 30*time.Millisecond })
	if !ok {
		t.Error("a condition true at the deadline was missed")
	}
}

func TestHolds(t *testing.T) {
	start := time.Now()
	calls := 0
	Holds(t, 50*time.Millisecond, "true", func() bool { calls++; return true })
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond || calls < 2 {
		t.Errorf("Holds returned after %v and %d calls, want at least 50ms and 2 calls", elapsed, calls)
	}
	r := &recorder{TB: t}
	n := 0
	Holds(r, 5*time.Second, "the count below 3", func() bool { n++; return n < 3 })
	if !strings.HasPrefix(r.failed, "the count below 3 stopped holding after ") {
		t.Errorf("failure message %q", r.failed)
	}
}
