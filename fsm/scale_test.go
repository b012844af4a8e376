package fsm_test

import (
	"bytes"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// scaleState is the database the scale benchmarks snapshot and restore,
// built once per test binary: 10,000 machines and 1,000,000 jobs, or
// 1,000 and 100,000 with -short.
var scaleState = sync.OnceValues(func() (*fsm.FSM, error) {
	p := fsmscale.Params{Machines: 10_000, Jobs: 1_000_000}
	if testing.Short() {
		p = fsmscale.Params{Machines: 1_000, Jobs: 100_000}
	}
	f := fsm.New()
	_, err := fsmscale.Build(f, p)
	return f, err
})

// scaleFSM returns the scale state, failing the benchmark if it cannot be
// built.
func scaleFSM(b *testing.B) *fsm.FSM {
	b.Helper()
	f, err := scaleState()
	if err != nil {
		b.Fatalf("build scale state: %v", err)
	}
	return f
}

// countSink is a raft.SnapshotSink that counts the bytes and keeps none.
type countSink struct{ n int64 }

func (s *countSink) Write(p []byte) (int, error) { s.n += int64(len(p)); return len(p), nil }
func (s *countSink) ID() string                  { return "count" }
func (s *countSink) Cancel() error               { return nil }
func (s *countSink) Close() error                { return nil }

// BenchmarkSnapshot1M is one Snapshot and Persist of the scale state (see
// scaleState) into a sink that discards the bytes; it reports the
// snapshot's size.
func BenchmarkSnapshot1M(b *testing.B) {
	f := scaleFSM(b)
	var sink countSink
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sink.n = 0
		snap, err := f.Snapshot()
		if err != nil {
			b.Fatalf("snapshot: %v", err)
		}
		if err := snap.Persist(&sink); err != nil {
			b.Fatalf("persist: %v", err)
		}
		snap.Release()
	}
	b.ReportMetric(float64(sink.n)/(1<<20), "MiB")
}

// BenchmarkRestore1M restores the scale state's snapshot into a new FSM
// and reports the heap the restored state holds, in all and per job.
func BenchmarkRestore1M(b *testing.B) {
	data := snapshotBytes(b, scaleFSM(b))
	before := liveHeap()
	b.ReportAllocs()
	b.ResetTimer()
	var f *fsm.FSM
	for b.Loop() {
		f = fsm.New()
		if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			b.Fatalf("restore: %v", err)
		}
	}
	b.StopTimer()
	held := float64(liveHeap() - before)
	var jobs int
	f.Read(func(v fsm.View) { jobs = len(v.Jobs()) })
	b.ReportMetric(held/(1<<20), "restored-MiB")
	b.ReportMetric(held/float64(jobs), "B/job")
	runtime.KeepAlive(f)
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
