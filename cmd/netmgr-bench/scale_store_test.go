package main

import (
	"bytes"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// TestDataDirRoundTrip persists a small scale state into a data directory
// and restores it: the restored state snapshots to the same bytes, and
// the snapshot's metadata names the one server at its Raft address.
func TestDataDirRoundTrip(t *testing.T) {
	f := fsm.New()
	if _, err := fsmscale.Build(f, fsmscale.Params{Machines: 100, Jobs: 2000}); err != nil {
		t.Fatalf("build: %v", err)
	}
	d, err := newDataDir(t.TempDir(), "scale1", "127.0.0.1:17647")
	if err != nil {
		t.Fatalf("data dir: %v", err)
	}
	if st, err := d.snapshot(f); err != nil || st.bytes == 0 {
		t.Fatalf("snapshot: got %d bytes, error %v; want some and nil", st.bytes, err)
	}
	metas, err := d.store.List()
	if err != nil || len(metas) != 1 {
		t.Fatalf("list: got %d snapshots, error %v; want 1 and nil", len(metas), err)
	}
	index, _ := f.Watch()
	srv := metas[0].Configuration.Servers
	if metas[0].Index != index || len(srv) != 1 || srv[0].ID != "scale1" || srv[0].Address != "127.0.0.1:17647" {
		t.Errorf("got snapshot at index %d of %+v, want %d of scale1 at 127.0.0.1:17647", metas[0].Index, srv, index)
	}
	g, _, err := d.restore()
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	want, err := snapshotBytes(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := snapshotBytes(g)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("restored state differs: %d snapshot bytes, want %d", len(got), len(want))
	}
}
