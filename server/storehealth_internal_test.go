package server

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
	var h storeHealth
	w := &watchedStore{raftStore: inner, health: &h}
	entry := func(i uint64) []*raft.Log { return []*raft.Log{{Index: i, Term: 1, Data: []byte("x")}} }

	if err := w.StoreLogs(entry(1)); err != nil {
		t.Fatalf("StoreLogs: %v", err)
	}
	if kind, text := h.problem(time.Now()); kind != "" {
		t.Fatalf("after a good write: problem %s %q, want none", kind, text)
	}

	inner.fail = true
	if err := w.StoreLogs(entry(2)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StoreLogs = %v, want ENOSPC passed on", err)
	}
	_ = w.StoreLogs(entry(2))
	kind, text := h.problem(time.Now().Add(5 * time.Second))
	if kind != problemLogWrites || !strings.HasPrefix(text, "log writes failing for 5s: ") || !strings.Contains(text, "no space left on device") {
		t.Fatalf("after failed writes: problem %s %q, want %s naming the error", kind, text, problemLogWrites)
	}
	if got := h.failures.Load(); got != 2 {
		t.Errorf("failures = %d, want 2", got)
	}

	before := time.Now()
	inner.fail = false
	if err := w.StoreLogs(entry(2)); err != nil {
		t.Fatalf("StoreLogs: %v", err)
	}
	if kind, _ := h.problem(time.Now()); kind != problemCatchingUp {
		t.Fatalf("after writes work again: problem %q, want %s", kind, problemCatchingUp)
	}
	h.caughtUp(before) // a comparison made before the recovery proves nothing
	if kind, _ := h.problem(time.Now()); kind != problemCatchingUp {
		t.Fatalf("after a stale catch-up: problem %q, want %s", kind, problemCatchingUp)
	}
	h.caughtUp(time.Now())
	if kind, text := h.problem(time.Now()); kind != "" {
		t.Fatalf("after catching up: problem %s %q, want none", kind, text)
	}
	var got raft.Log
	if err := bolt.GetLog(2, &got); err != nil || string(got.Data) != "x" {
		t.Errorf("entry 2 in the real store: %v %+v", err, got)
	}
}

func TestLagOf(t *testing.T) {
	tests := []struct {
		name               string
		last, commit, prev uint64
		behind             uint64
		caughtUp           bool
	}{
		{"holds every commit", 100, 100, 90, 0, true},
		{"ahead of the commit index", 101, 100, 90, 0, true},
		{"lacks only new commits", 95, 100, 90, 0, false},
		{"lacks commits of a round ago", 80, 100, 90, 20, false},
		{"first round", 80, 100, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			behind, caughtUp := lagOf(tt.last, tt.commit, tt.prev)
			if behind != tt.behind || caughtUp != tt.caughtUp {
				t.Errorf("lagOf(%d, %d, %d) = %d, %v; want %d, %v", tt.last, tt.commit, tt.prev, behind, caughtUp, tt.behind, tt.caughtUp)
			}
		})
	}
}
