package server

import (
	"testing"
	"time"
)

// The buckets at explicit times: a burst, then a refusal saying how long
// until the next token, a refill, and an idle bucket forgotten.
func TestRateLimiterTake(t *testing.T) {
	l := newRateLimiter(10, 3)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if d := l.take("alice", t0); d != 0 {
			t.Fatalf("take %d = %v, want 0 (within the burst)", i+1, d)
		}
	}
	if d := l.take("alice", t0); d != 100*time.Millisecond {
		t.Errorf("take past the burst = %v, want 100ms", d)
	}
	if d := l.take("bob", t0); d != 0 {
		t.Errorf("bob's take = %v, want 0", d)
	}
	if d := l.take("alice", t0.Add(100*time.Millisecond)); d != 0 {
		t.Errorf("take after 100ms = %v, want 0 (refilled)", d)
	}
	if d := l.until("alice", t0.Add(100*time.Millisecond)); d != 100*time.Millisecond {
		t.Errorf("until after the refill was taken = %v, want 100ms", d)
	}
	if d := l.until("alice", t0.Add(300*time.Millisecond)); d != 0 {
		t.Errorf("until with tokens there = %v, want 0", d)
	}
	for i := range maxHeld {
		if !l.hold("alice") {
			t.Fatalf("hold %d = false, want true (up to %d)", i+1, maxHeld)
		}
	}
	if l.hold("alice") {
		t.Errorf("hold past %d = true, want false (answered at once)", maxHeld)
	}
	l.take("carol", t0.Add(userBucketIdle+time.Second))
	if got := l.users(); got != 2 {
		t.Errorf("buckets after a minute idle = %d, want 2 (carol's, and alice's with refusals held)", got)
	}
	for range maxHeld {
		l.unhold("alice")
	}
	l.take("carol", t0.Add(2*userBucketIdle+time.Second))
	if got := l.users(); got != 1 {
		t.Errorf("buckets after a minute idle = %d, want 1 (carol's)", got)
	}
}

// A user's use: named blobs, and uploads not named within the grace;
// reserve refuses what passes the quota unless already counted.
func TestBlobUploads(t *testing.T) {
	u := newBlobUploads()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	named := map[string]int64{"a": 400}
	for _, tc := range []struct {
		name     string
		sum      string
		size     int64
		at       time.Time
		wantUsed int64
		wantOK   bool
	}{
		{"an upload within the quota", "b", 500, t0, 400, true},
		{"one past it", "c", 200, t0, 900, false},
		{"a named blob again", "a", 400, t0, 900, true},
		{"an upload again", "b", 500, t0, 900, true},
		{"past it after the upload's grace", "c", 200, t0.Add(blobGrace), 400, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used, ok := u.reserve("alice", tc.sum, tc.size, named, 1000, tc.at)
			if used != tc.wantUsed || ok != tc.wantOK {
				t.Errorf("reserve(%s, %d) = %d, %v; want %d, %v", tc.sum, tc.size, used, ok, tc.wantUsed, tc.wantOK)
			}
		})
	}
	if used, counted := u.usage("bob", nil, "a", t0); used != 0 || counted {
		t.Errorf("bob's usage = %d, %v; want 0, false", used, counted)
	}
}

// Times that reach the limiter out of order (callers read the clock
// before they wait for its lock) are not counted twice for refills.
func TestRateLimiterTimesOutOfOrder(t *testing.T) {
	l := newRateLimiter(10, 2) // a token every 100 ms
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		at      int
		allowed bool
	}{
		{0, true}, {100, true}, {50, true}, {150, false}, {200, true},
	} {
		if got := l.take("alice", ms(tc.at)) == 0; got != tc.allowed {
			t.Errorf("take at %d ms allowed = %v, want %v", tc.at, got, tc.allowed)
		}
	}
}
