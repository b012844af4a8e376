package main

import (
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// TestSnapshotUnderLoad takes a small scale state's snapshot under the
// stall traffic, then runs the same traffic without one: both measure
// each kind of request, the commands applied go on from the state's
// index, and the snapshot persisted is the state at the index it was
// taken at, which a restore reads back.
func TestSnapshotUnderLoad(t *testing.T) {
	f := fsm.New()
	st, err := fsmscale.Build(f, fsmscale.Params{Machines: 100, Jobs: 3000})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	d, err := newDataDir(t.TempDir(), "scale1", "127.0.0.1:17647")
	if err != nil {
		t.Fatalf("data dir: %v", err)
	}
	var machines []string
	f.Read(func(v fsm.View) {
		for _, m := range v.Machines() {
			machines = append(machines, m.Name)
		}
	})
	jobs := uint64(st.Jobs)
	snap, next, err := snapshotUnderLoad(f, d, machines, jobs, jobs-50, st.Index, 0)
	if err != nil {
		t.Fatalf("snapshot under load: %v", err)
	}
	if len(snap.renew) == 0 || len(snap.read) == 0 || len(snap.submit) == 0 || snap.snap.bytes == 0 {
		t.Fatalf("got %d renewals, %d reads, %d submits and %d snapshot bytes; want some of each",
			len(snap.renew), len(snap.read), len(snap.submit), snap.snap.bytes)
	}
	if now, _ := f.Watch(); next <= st.Index || now != next {
		t.Errorf("applied index %d, returned %d, built at %d: want the commands applied after the build", now, next, st.Index)
	}
	base, _, err := snapshotUnderLoad(f, d, machines, jobs, jobs-50, next, snap.snap.total)
	if err != nil || len(base.renew) == 0 || base.snap.bytes != 0 {
		t.Errorf("baseline: got %d renewals, %d snapshot bytes, error %v; want renewals, no snapshot, nil", len(base.renew), base.snap.bytes, err)
	}
	metas, err := d.store.List()
	if err != nil || len(metas) != 1 || metas[0].Index <= st.Index || metas[0].Index >= next {
		t.Fatalf("got snapshots %+v (error %v), want one taken between index %d and %d", metas, err, st.Index, next)
	}
	g, _, err := d.restore()
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if idx, _ := g.Watch(); idx != metas[0].Index {
		t.Errorf("restored index %d, want the snapshot's %d", idx, metas[0].Index)
	}
}
