package ckptcache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/files"
)

// TestPutGet keeps archives and reads them back checked; a name the
// cache lacks, a damaged archive (removed) and a bad name are missing.
func TestPutGet(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := []byte("archive a")
	if err := c.Put(files.Sum(a), a); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Get(files.Sum(a)); !ok || !bytes.Equal(got, a) {
		t.Errorf("Get(a) = %q, %v; want a, true", got, ok)
	}
	b := []byte("archive b")
	if _, ok := c.Get(files.Sum(b)); ok {
		t.Error("Get of an archive never put: found")
	}
	if err := os.WriteFile(filepath.Join(dir, files.Sum(b)), []byte("not b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(files.Sum(b)); ok {
		t.Error("Get of a damaged archive: found")
	}
	if _, err := os.Stat(filepath.Join(dir, files.Sum(b))); !os.IsNotExist(err) {
		t.Errorf("the damaged archive is still there: %v", err)
	}
	if err := c.Put("../x", a); err == nil {
		t.Error("Put under a name that is no sum: no error")
	}
	if _, ok := c.Get("../x"); ok {
		t.Error("Get under a name that is no sum: found")
	}
}

// TestEvictsOldest keeps at most MaxEntries archives, removing the
// oldest, and clears what an interrupted write left when opened.
func TestEvictsOldest(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, tmpPrefix+"1"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, tmpPrefix+"1")); !os.IsNotExist(err) {
		t.Errorf("an interrupted write's file survived Open: %v", err)
	}
	var sums []string
	base := time.Now().Add(-time.Hour)
	for i := range MaxEntries + 2 {
		data := []byte{byte(i)}
		sum := files.Sum(data)
		if err := c.Put(sum, data); err != nil {
			t.Fatal(err)
		}
		// Distinct ages whatever the file system's clock granularity.
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, sum), at, at); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	for i, sum := range sums {
		_, ok := c.Get(sum)
		if want := i >= len(sums)-MaxEntries; ok != want {
			t.Errorf("archive %d of %d held: %v, want %v", i+1, len(sums), ok, want)
		}
	}
}
