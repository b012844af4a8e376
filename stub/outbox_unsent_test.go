package stub

import (
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// The in-memory mirror hands out what the file holds, in sequence order,
// with concurrent recorders and removals, and after a reopen.
func TestOutboxUnsentMirrorsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	out, err := openOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			k := attemptKey{JobID: uint64(i + 1), Attempt: 1}
			ev := client.ChildEvent{Kind: client.ChildRegister, JobID: k.JobID, Attempt: 1}
			if err := out.record(k, nil, ev); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all, err := out.pending(100)
	if err != nil {
		t.Fatal(err)
	}
	seqs := func(es []entry) []uint64 {
		var s []uint64
		for _, e := range es {
			s = append(s, e.seq)
		}
		return s
	}
	if len(all) != 40 || !slices.IsSorted(seqs(all)) {
		t.Fatalf("pending = %v, want 40 events in sequence order", seqs(all))
	}
	if err := out.remove(all[0].seq, all[10].seq, all[39].seq); err != nil {
		t.Fatal(err)
	}
	if first, _ := out.pending(2); len(first) != 2 || first[0].seq != all[1].seq || first[1].seq != all[2].seq {
		t.Errorf("pending(2) = %v, want %v", seqs(first), []uint64{all[1].seq, all[2].seq})
	}
	before, _ := out.pending(100)
	if err := out.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := out.pending(1); err == nil {
		t.Error("pending on a closed outbox: no error")
	}

	out, err = openOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.close()
	after, _ := out.pending(100)
	if !slices.Equal(seqs(after), seqs(before)) || len(after) != 37 {
		t.Fatalf("after a reopen pending = %v, want %v", seqs(after), seqs(before))
	}
	for i := range after {
		if !reflect.DeepEqual(after[i].ev, before[i].ev) {
			t.Errorf("event %d: %+v after a reopen, %+v before", after[i].seq, after[i].ev, before[i].ev)
		}
	}
}
