package history_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/netmgr/netmgr/server/history"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func open(t *testing.T) *history.DB {
	t.Helper()
	db, err := history.Open(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// attempt is an attempt of job (instance 0) that ended at t0+min minutes.
func attempt(job, n uint64, owner, queue, machine, state string, min int) history.Attempt {
	return history.Attempt{Job: job, Attempt: n, Owner: owner, Queue: queue, Machine: machine, State: state,
		StartedAt: t0.Add(time.Duration(min-1) * time.Minute), EndedAt: t0.Add(time.Duration(min) * time.Minute)}
}

func ids(as []history.Attempt) [][2]uint64 {
	out := [][2]uint64{}
	for _, a := range as {
		out = append(out, [2]uint64{a.Job, a.Attempt})
	}
	return out
}

func write(t *testing.T, db *history.DB, es ...history.Entry) {
	t.Helper()
	if err := db.Write(es); err != nil {
		t.Fatal(err)
	}
}

// sample writes four entries: jobs 1 (alice, two attempts, the first
// replaced), 2 (bob, on q), 3 (alice, killed on m2), with events.
func sample(t *testing.T, db *history.DB) {
	a1 := attempt(1, 1, "alice", "", "m1", "failed", 1)
	a1.ReplacedBy = 2
	write(t, db,
		history.Entry{Index: 10, Attempts: []history.Attempt{a1},
			Events: []history.Event{{At: t0.Add(time.Minute), Kind: "instance-failed", Job: 1}, {At: t0.Add(time.Minute), Kind: "instance-restarted", Job: 1}}},
		history.Entry{Index: 12, Attempts: []history.Attempt{attempt(2, 1, "bob", "q", "m1", "exited", 2)},
			Events: []history.Event{{At: t0.Add(2 * time.Minute), Kind: "instance-ended", Job: 2}}},
		history.Entry{Index: 15, Attempts: []history.Attempt{attempt(1, 2, "alice", "", "m2", "exited", 3)}},
		history.Entry{Index: 20, Attempts: []history.Attempt{attempt(3, 1, "alice", "", "m2", "killed", 4)},
			Events: []history.Event{{At: t0.Add(4 * time.Minute), Kind: "instance-killed", Job: 3}}},
	)
}

func TestAttemptsFilters(t *testing.T) {
	db := open(t)
	sample(t, db)
	tests := []struct {
		name string
		f    history.Filter
		want [][2]uint64
	}{
		{"all", history.Filter{}, [][2]uint64{{1, 1}, {2, 1}, {1, 2}, {3, 1}}},
		{"user", history.Filter{User: "alice"}, [][2]uint64{{1, 1}, {1, 2}, {3, 1}}},
		{"user none", history.Filter{User: "carol"}, [][2]uint64{}},
		{"state", history.Filter{State: "exited"}, [][2]uint64{{2, 1}, {1, 2}}},
		{"queue", history.Filter{Queue: "q"}, [][2]uint64{{2, 1}}},
		{"machine", history.Filter{Machine: "m2"}, [][2]uint64{{1, 2}, {3, 1}}},
		{"user and machine", history.Filter{User: "alice", Machine: "m1"}, [][2]uint64{{1, 1}}},
		{"job", history.Filter{Job: 1}, [][2]uint64{{1, 1}, {1, 2}}},
		{"job and state", history.Filter{Job: 1, State: "exited"}, [][2]uint64{{1, 2}}},
		{"job and user", history.Filter{Job: 1, User: "bob"}, [][2]uint64{}},
		{"job none", history.Filter{Job: 9}, [][2]uint64{}},
		{"since", history.Filter{Since: t0.Add(2 * time.Minute)}, [][2]uint64{{2, 1}, {1, 2}, {3, 1}}},
		{"until", history.Filter{Until: t0.Add(2 * time.Minute)}, [][2]uint64{{1, 1}}},
		{"user since until", history.Filter{User: "alice", Since: t0.Add(2 * time.Minute), Until: t0.Add(4 * time.Minute)}, [][2]uint64{{1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.Attempts(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Attempts(%+v) = %v, want %v", tt.f, g, tt.want)
			}
		})
	}
	as, _ := db.Attempts(history.Filter{User: "alice", State: "failed"})
	if len(as) != 1 || as[0].ReplacedBy != 2 || as[0].Index != 10 {
		t.Errorf("failed attempt of alice = %+v, want job 1 attempt 1 replaced by 2 at index 10", as)
	}
}

func TestWriteIdempotent(t *testing.T) {
	db := open(t)
	sample(t, db)
	sample(t, db) // a restart applies the same entries again
	as, err := db.Attempts(history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 4 {
		t.Errorf("got %d attempts after writing twice, want 4", len(as))
	}
	evs, err := db.Events(history.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Errorf("got %d events after writing twice, want 4", len(evs))
	}
	for _, f := range []history.Filter{{User: "alice"}, {Machine: "m1"}, {State: "exited"}} {
		got, _ := db.Attempts(f)
		want := map[string]int{"alice": 3, "m1": 2, "exited": 2}[f.User+f.Machine+f.State]
		if len(got) != want {
			t.Errorf("Attempts(%+v) after writing twice: %d, want %d", f, len(got), want)
		}
	}
}

func TestLaterRecordOfAttemptWins(t *testing.T) {
	db := open(t)
	lost := attempt(5, 1, "alice", "", "m1", "lost", 1)
	write(t, db, history.Entry{Index: 30, Attempts: []history.Attempt{lost}})
	exited := attempt(5, 1, "alice", "", "m1", "exited", 2)
	write(t, db, history.Entry{Index: 31, Attempts: []history.Attempt{exited}})
	write(t, db, history.Entry{Index: 30, Attempts: []history.Attempt{lost}}) // replayed: older, ignored
	as, _ := db.Attempts(history.Filter{})
	if len(as) != 1 || as[0].State != "exited" || as[0].Index != 31 {
		t.Fatalf("attempts = %+v, want the one exited at index 31", as)
	}
	if got, _ := db.Attempts(history.Filter{State: "lost"}); len(got) != 0 {
		t.Errorf("state index still lists the lost record: %+v", got)
	}
}

func TestEvents(t *testing.T) {
	db := open(t)
	sample(t, db)
	tests := []struct {
		name string
		f    history.EventFilter
		want []string
	}{
		{"all", history.EventFilter{}, []string{"instance-failed", "instance-restarted", "instance-ended", "instance-killed"}},
		{"after", history.EventFilter{After: 10}, []string{"instance-ended", "instance-killed"}},
		{"since", history.EventFilter{Since: t0.Add(3 * time.Minute)}, []string{"instance-killed"}},
		{"limit", history.EventFilter{Limit: 1}, []string{"instance-failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := db.Events(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			got := kinds(evs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Events(%+v) = %v, want %v", tt.f, got, tt.want)
			}
		})
	}
	evs, _ := db.Events(history.EventFilter{})
	if evs[1].Index != 10 || evs[1].Seq != 1 {
		t.Errorf("second event index/seq = %d/%d, want 10/1", evs[1].Index, evs[1].Seq)
	}
}

// kinds is the kinds of evs, in order (empty, not nil, for none).
func kinds(evs []history.Event) []string {
	got := []string{}
	for _, e := range evs {
		got = append(got, e.Kind)
	}
	return got
}

// LastEvents returns the newest events, oldest first, however many the
// history holds.
func TestLastEvents(t *testing.T) {
	db := open(t)
	sample(t, db)
	tests := []struct {
		name string
		n    int
		want []string
	}{
		{"none", 0, []string{}},
		{"two", 2, []string{"instance-ended", "instance-killed"}},
		{"more than held", 10, []string{"instance-failed", "instance-restarted", "instance-ended", "instance-killed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := db.LastEvents(tt.n)
			if err != nil {
				t.Fatal(err)
			}
			got := kinds(evs)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("LastEvents(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestSweep(t *testing.T) {
	db := open(t)
	sample(t, db)
	n, err := db.Sweep(t0.Add(3 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// Before minute 3: attempts (1,1), (2,1); events at minutes 1, 1, 2.
	if n != 5 {
		t.Errorf("Sweep removed %d records, want 5", n)
	}
	as, _ := db.Attempts(history.Filter{})
	if g, want := ids(as), [][2]uint64{{1, 2}, {3, 1}}; !reflect.DeepEqual(g, want) {
		t.Errorf("after sweep: %v, want %v", g, want)
	}
	if got, _ := db.Attempts(history.Filter{User: "bob"}); len(got) != 0 {
		t.Errorf("bob's index still lists a swept attempt: %+v", got)
	}
	evs, _ := db.Events(history.EventFilter{})
	if len(evs) != 1 || evs[0].Kind != "instance-killed" {
		t.Errorf("events after sweep = %+v, want only instance-killed", evs)
	}
	if n, _ := db.Sweep(t0.Add(3 * time.Minute)); n != 0 {
		t.Errorf("second sweep removed %d, want 0", n)
	}
}

func TestRestoredGapAndFill(t *testing.T) {
	peer, db := open(t), open(t)
	sample(t, peer)
	write(t, db, history.Entry{Index: 5})
	if err := db.Restored(15); err != nil { // a snapshot at 15: 6..15 never applied here
		t.Fatal(err)
	}
	if err := db.Restored(12); err != nil { // older than what it holds: nothing missing
		t.Fatal(err)
	}
	write(t, db, history.Entry{Index: 20, Attempts: []history.Attempt{attempt(3, 1, "alice", "", "m2", "killed", 4)}})
	gaps, _ := db.Gaps()
	if want := []history.Gap{{After: 5, Through: 15}}; !reflect.DeepEqual(gaps, want) {
		t.Fatalf("Gaps = %v, want %v", gaps, want)
	}
	if _, _, err := db.Range(0, 20, 0); !errors.Is(err, history.ErrNotCovered) {
		t.Errorf("Range over a gap: err = %v, want ErrNotCovered", err)
	}
	if _, _, err := peer.Range(0, 21, 0); !errors.Is(err, history.ErrNotCovered) {
		t.Errorf("Range beyond Applied: err = %v, want ErrNotCovered", err)
	}
	// Page by page, one record at a time, as a peer answers a big range.
	after := uint64(5)
	for pages := 0; after < 15; pages++ {
		if pages > 10 {
			t.Fatal("Range makes no progress")
		}
		es, upTo, err := peer.Range(after, 15, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Fill(after, upTo, es); err != nil {
			t.Fatal(err)
		}
		after = upTo
	}
	if gaps, _ := db.Gaps(); len(gaps) != 0 {
		t.Errorf("Gaps after fill = %v, want none", gaps)
	}
	got, _ := db.Attempts(history.Filter{})
	want, _ := peer.Attempts(history.Filter{})
	if !reflect.DeepEqual(ids(got), ids(want)) {
		t.Errorf("filled history = %v, want the peer's %v", ids(got), ids(want))
	}
	gotEv, _ := db.Events(history.EventFilter{After: 5})
	wantEv, _ := peer.Events(history.EventFilter{After: 5, Until: t0.Add(3 * time.Minute)})
	if len(gotEv) != len(wantEv) || len(gotEv) != 3 {
		t.Errorf("filled events = %d, want the peer's %d (3)", len(gotEv), len(wantEv))
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	db, err := history.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sample(t, db)
	if err := db.Restored(40); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = history.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, _ := db.Applied(); n != 40 {
		t.Errorf("Applied after reopen = %d, want 40", n)
	}
	if gaps, _ := db.Gaps(); !reflect.DeepEqual(gaps, []history.Gap{{After: 20, Through: 40}}) {
		t.Errorf("Gaps after reopen = %v", gaps)
	}
	if as, _ := db.Attempts(history.Filter{}); len(as) != 4 {
		t.Errorf("attempts after reopen = %d, want 4", len(as))
	}
}
