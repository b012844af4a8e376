package outbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestGroupCommit(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("b")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	g := groupCommitter{db: db}
	errBad := errors.New("refused")

	const writers = 64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			errs[i] = g.update(func(tx *bolt.Tx) error {
				if i%10 == 3 {
					return errBad // fails alone, not its transaction's company
				}
				return tx.Bucket(bucket).Put(fmt.Appendf(nil, "k%02d", i), []byte("v"))
			})
		})
	}
	wg.Wait()

	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for i := range writers {
			got := b.Get(fmt.Appendf(nil, "k%02d", i))
			switch {
			case i%10 == 3 && !errors.Is(errs[i], errBad):
				t.Errorf("writer %d: err = %v, want %v", i, errs[i], errBad)
			case i%10 == 3 && got != nil:
				t.Errorf("writer %d failed but its key is stored", i)
			case i%10 != 3 && errs[i] != nil:
				t.Errorf("writer %d: err = %v, want nil", i, errs[i])
			case i%10 != 3 && got == nil:
				t.Errorf("writer %d succeeded but its key is missing", i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.busy || len(g.pending) > 0 {
		t.Errorf("committer left busy=%v with %d pending calls", g.busy, len(g.pending))
	}
}
