package raftnode

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// failingStore fails every write while fail is set, before it reaches the
// real store underneath.
type failingStore struct {
	raftStore
	fail bool
}

func (f *failingStore) StoreLogs(ls []*raft.Log) error {
	if f.fail {
		return syscall.ENOSPC
	}
	return f.raftStore.StoreLogs(ls)
}

func TestWatchedStoreRecordsWrites(t *testing.T) {
	bolt, err := openRaftStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	inner := &failingStore{raftStore: bolt}
	var h Health
	w := &watchedStore{raftStore: inner, health: &h}
	entry := func(i uint64) []*raft.Log { return []*raft.Log{{Index: i, Term: 1, Data: []byte("x")}} }

	if err := w.StoreLogs(entry(1)); err != nil {
		t.Fatalf("StoreLogs: %v", err)
	}
	if kind, text := h.Problem(time.Now()); kind != "" {
		t.Fatalf("after a good write: problem %s %q, want none", kind, text)
	}

	inner.fail = true
	if err := w.StoreLogs(entry(2)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StoreLogs = %v, want ENOSPC passed on", err)
	}
	_ = w.StoreLogs(entry(2))
	kind, text := h.Problem(time.Now().Add(5 * time.Second))
	if kind != ProblemLogWrites || !strings.HasPrefix(text, "log writes failing for 5s: ") || !strings.Contains(text, "no space left on device") {
		t.Fatalf("after failed writes: problem %s %q, want %s naming the error", kind, text, ProblemLogWrites)
	}
	if got := h.Failures(); got != 2 {
		t.Errorf("failures = %d, want 2", got)
	}

	before := time.Now()
	inner.fail = false
	if err := w.StoreLogs(entry(2)); err != nil {
		t.Fatalf("StoreLogs: %v", err)
	}
	if kind, _ := h.Problem(time.Now()); kind != ProblemCatchingUp {
		t.Fatalf("after writes work again: problem %q, want %s", kind, ProblemCatchingUp)
	}
	h.CaughtUp(before) // a comparison made before the recovery proves nothing
	if kind, _ := h.Problem(time.Now()); kind != ProblemCatchingUp {
		t.Fatalf("after a stale catch-up: problem %q, want %s", kind, ProblemCatchingUp)
	}
	h.CaughtUp(time.Now())
	if kind, text := h.Problem(time.Now()); kind != "" {
		t.Fatalf("after catching up: problem %s %q, want none", kind, text)
	}
	var got raft.Log
	if err := bolt.GetLog(2, &got); err != nil || string(got.Data) != "x" {
		t.Errorf("entry 2 in the real store: %v %+v", err, got)
	}
}

func TestHealthProblem(t *testing.T) {
	full := errors.New("no space left on device")
	var h Health
	start := time.Now()
	if kind, text := h.Problem(start); kind != "" || text != "" {
		t.Fatalf("zero Health: problem %s %q, want none", kind, text)
	}
	if err := h.wrote(full); err != full {
		t.Fatalf("wrote returned %v, want the write's error", err)
	}
	for _, tt := range []struct {
		name     string
		at       time.Time
		kind     string
		text     string
		failures uint64
	}{
		{"just failed", time.Now(), ProblemLogWrites, "log write failed: no space left on device", 1},
		{"failing for a while", start.Add(90 * time.Second), ProblemLogWrites, "log writes failing for 1m30s: no space left on device", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kind, text := h.Problem(tt.at)
			if kind != tt.kind || text != tt.text || h.Failures() != tt.failures {
				t.Errorf("got %s %q after %d failures; want %s %q after %d", kind, text, h.Failures(), tt.kind, tt.text, tt.failures)
			}
		})
	}
	// A good write while healthy changes nothing; after a failure it
	// starts the catching up, which a catch-up as of then ends.
	if err := h.wrote(nil); err != nil {
		t.Fatal(err)
	}
	if kind, _ := h.Problem(time.Now()); kind != ProblemCatchingUp {
		t.Fatalf("after a good write: problem %q, want %s", kind, ProblemCatchingUp)
	}
	h.CaughtUp(time.Now())
	if kind, text := h.Problem(time.Now()); kind != "" {
		t.Fatalf("after catching up: problem %s %q, want none", kind, text)
	}
}
