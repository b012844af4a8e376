package outbox

import (
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	bolt "go.etcd.io/bbolt"
)

// The in-memory mirror hands out what the file holds, in sequence order,
// with concurrent recorders and removals, and after a reopen.
func TestOutboxUnsentMirrorsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	out, err := Open(path, filepath.Join(filepath.Dir(path), "attempts"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			k := client.AttemptRef{JobID: uint64(i + 1), Attempt: 1}
			ev := client.ChildEvent{Kind: client.ChildRegister, JobID: k.JobID, Attempt: 1}
			if err := out.Record(k, nil, ev); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all, err := out.Pending(100)
	if err != nil {
		t.Fatal(err)
	}
	seqs := func(es []Entry) []uint64 {
		var s []uint64
		for _, e := range es {
			s = append(s, e.Seq)
		}
		return s
	}
	if len(all) != 40 || !slices.IsSorted(seqs(all)) {
		t.Fatalf("pending = %v, want 40 events in sequence order", seqs(all))
	}
	if err := out.Remove(all[0].Seq, all[10].Seq, all[39].Seq); err != nil {
		t.Fatal(err)
	}
	if first, _ := out.Pending(2); len(first) != 2 || first[0].Seq != all[1].Seq || first[1].Seq != all[2].Seq {
		t.Errorf("pending(2) = %v, want %v", seqs(first), []uint64{all[1].Seq, all[2].Seq})
	}
	before, _ := out.Pending(100)
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Pending(1); err == nil {
		t.Error("pending on a closed outbox: no error")
	}

	out, err = Open(path, filepath.Join(filepath.Dir(path), "attempts"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	after, _ := out.Pending(100)
	if !slices.Equal(seqs(after), seqs(before)) || len(after) != 37 {
		t.Fatalf("after a reopen pending = %v, want %v", seqs(after), seqs(before))
	}
	for i := range after {
		if !reflect.DeepEqual(after[i].Ev, before[i].Ev) {
			t.Errorf("event %d: %+v after a reopen, %+v before", after[i].Seq, after[i].Ev, before[i].Ev)
		}
	}
}

// fileEvents counts the events in the outbox file.
func fileEvents(t *testing.T, out *Outbox) int {
	t.Helper()
	n := 0
	if err := out.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(eventsBucket).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// An answered event leaves the sender's view at once and the file with
// the next event recorded, or removeDelay later when none is, or at
// close.
func TestOutboxRemovalRidesOnTheNextRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	out, err := Open(path, filepath.Join(filepath.Dir(path), "attempts"))
	if err != nil {
		t.Fatal(err)
	}
	record := func(job uint64) {
		k := client.AttemptRef{JobID: job, Attempt: 1}
		if err := out.Record(k, nil, client.ChildEvent{Kind: client.ChildRegister, JobID: job, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
	}
	record(1)
	record(2)
	first, _ := out.Pending(10)
	if err := out.Remove(first[0].Seq); err != nil {
		t.Fatal(err)
	}
	if left, _ := out.Pending(10); len(left) != 1 || left[0].Seq != first[1].Seq {
		t.Fatalf("pending after a removal = %+v, want only event %d", left, first[1].Seq)
	}
	if n, _ := out.Backlog(); n != 1 {
		t.Errorf("backlog = %d, want 1", n)
	}
	record(3) // takes the removal with it
	if n := fileEvents(t, out); n != 2 {
		t.Errorf("file holds %d events after the next record, want 2", n)
	}

	// With no record after it, the removal is written removeDelay later.
	if err := out.Remove(first[1].Seq); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the removal without a record after it", func() bool { return fileEvents(t, out) == 1 })

	// One pending at close is written by close.
	last, _ := out.Pending(10)
	if err := out.Remove(last[0].Seq); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	out, err = Open(path, filepath.Join(filepath.Dir(path), "attempts"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if left, _ := out.Pending(10); len(left) != 0 {
		t.Errorf("after close and reopen pending = %+v, want none", left)
	}
}
