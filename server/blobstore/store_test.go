package blobstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/server/blobstore"
)

func TestStoreChecksWhatItKeepsAndReturns(t *testing.T) {
	s, err := blobstore.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("the input")
	sum := files.Sum(data)
	if err := s.Put(sum, []byte("other bytes")); err == nil {
		t.Fatal("stored bytes under a name that is not theirs")
	}
	if err := s.Put(sum, data); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(sum)
	if err != nil || string(got) != "the input" {
		t.Fatalf("get: %q %v", got, err)
	}
	// Damage on disk: Get refuses it and removes it.
	if err := os.WriteFile(filepath.Join(s.Dir(), sum), []byte("rotten"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(sum); !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("damaged blob: %v", err)
	}
	if s.Has(sum) {
		t.Error("damaged blob kept")
	}
	if _, err := s.Get("../etc"); !errors.Is(err, blobstore.ErrBadName) {
		t.Errorf("bad name: %v", err)
	}
	es, err := s.List()
	if err != nil || len(es) != 0 {
		t.Errorf("list: %v %v", es, err)
	}
}
