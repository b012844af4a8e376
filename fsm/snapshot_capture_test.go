package fsm_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/testwait"
)

// captureSteps is how long a generated log the capture tests build: past
// step 2000, where the generator adds cron jobs, gangs and expiry.
const captureSteps = 2400

// TestSnapshotMatchesEncodingAtOnce holds Persist's bytes to those of the
// whole state encoded at once under the lock (the snapshot before it was
// captured), on random states along generated logs, and a restore of them
// to the same bytes again.
func TestSnapshotMatchesEncodingAtOnce(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			g := newGenerator(t, seed)
			for step := 1; step <= captureSteps; step++ {
				g.next()
				if step%300 != 0 {
					continue
				}
				want := fsm.EncodeAtOnce(g.a.f)
				got := snapshotBytes(t, g.a.f)
				if !bytes.Equal(got, want) {
					t.Fatalf("step %d: Persist wrote %d bytes that differ from the %d encoded at once", step, len(got), len(want))
				}
				if again := fsm.EncodeAtOnce(restored(t, got)); !bytes.Equal(again, want) {
					t.Fatalf("step %d: the restored state encodes to other bytes", step)
				}
			}
		})
	}
}

// persistWhile takes f's snapshot, then persists it with hook called
// between chunks of chunk jobs, and returns the bytes and how many jobs
// the capture copied.
func persistWhile(t *testing.T, f *fsm.FSM, chunk int, hook func(jobs int)) ([]byte, int) {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	fsm.SetPersistHook(f, chunk, hook)
	defer fsm.SetPersistHook(f, 0, nil)
	got := persist(t, snap)
	return got, fsm.SnapshotCopies(snap)
}

// TestSnapshotWhileApplying applies generated commands while Persist
// writes (between its chunks, and from another goroutine at any time):
// the snapshot is the state at the index it was taken at, byte for byte,
// and restores to it.
func TestSnapshotWhileApplying(t *testing.T) {
	t.Parallel()
	for seed := uint64(21); seed <= 24; seed++ {
		t.Run(fmt.Sprint("between chunks, seed ", seed), func(t *testing.T) {
			t.Parallel()
			g := newGenerator(t, seed)
			for range captureSteps {
				g.next()
			}
			want := fsm.EncodeAtOnce(g.a.f)
			got, copies := persistWhile(t, g.a.f, 5, func(int) {
				for range 4 {
					g.next()
				}
			})
			checkCaptured(t, g.a.f, got, want, copies)
		})
		t.Run(fmt.Sprint("concurrently, seed ", seed), func(t *testing.T) {
			t.Parallel()
			g := newGenerator(t, seed)
			for range captureSteps {
				g.next()
			}
			want := fsm.EncodeAtOnce(g.a.f)
			snap, err := g.a.f.Snapshot()
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			defer snap.Release()
			// Persist waits for the applier's first commands, so that
			// some land while it runs whatever the scheduler does.
			started := make(chan struct{})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if i == 20 {
						close(started)
					}
					select {
					case <-stop:
						return
					default:
					}
					g.next()
				}
			}()
			<-started
			fsm.SetPersistHook(g.a.f, 3, nil)
			got := persist(t, snap)
			copies := fsm.SnapshotCopies(snap)
			close(stop)
			wg.Wait()
			checkCaptured(t, g.a.f, got, want, copies)
		})
	}
}

// checkCaptured checks a snapshot persisted while f changed: its bytes
// are want's, the state encoded at its index; f has changed since; and a
// restore of it encodes to want again.
func checkCaptured(t *testing.T, f *fsm.FSM, got, want []byte, copies int) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("Persist wrote %d bytes that differ from the %d of the state at the snapshot's index", len(got), len(want))
	}
	if bytes.Equal(fsm.EncodeAtOnce(f), want) {
		t.Fatalf("the state did not change while Persist ran: the test proves nothing")
	}
	t.Logf("%d jobs copied while Persist ran", copies)
	if again := fsm.EncodeAtOnce(restored(t, got)); !bytes.Equal(again, want) {
		t.Fatalf("the restored state encodes to other bytes")
	}
}

// TestSnapshotCopiesChangedJobs checks that the commands changing a job
// written later copy it, on a state where every job changes: a kill of
// every running job while the first chunk is written.
func TestSnapshotCopiesChangedJobs(t *testing.T) {
	t.Parallel()
	g := newGenerator(t, 31)
	for range captureSteps {
		g.next()
	}
	var running []uint64
	g.a.f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			if s := j.State(); s == fsm.JobRunning || s == fsm.JobQueued {
				running = append(running, j.ID)
			}
		}
	})
	if len(running) == 0 {
		t.Fatalf("the generated state has no running or queued job")
	}
	want := fsm.EncodeAtOnce(g.a.f)
	once := false
	got, copies := persistWhile(t, g.a.f, 1, func(int) {
		if once {
			return
		}
		once = true
		for _, id := range running {
			g.emit(g.cmd(fsm.KillType, fsm.Kill{At: at(captureSteps + 1), JobID: id, By: "test", Signal: "KILL"}))
		}
	})
	checkCaptured(t, g.a.f, got, want, copies)
	if copies < len(running)-1 {
		t.Errorf("the capture copied %d jobs; %d were killed after the first was written", copies, len(running))
	}
}

// TestPersistDoesNotBlockReads: while Persist holds its lock in the
// middle of a chunk of jobs (its hook) and an Apply waits for it, a read
// completes. Before snapshots were captured, the read lock was held for
// the whole encoding: an Apply waited for it, and Go's RWMutex made every
// new read wait behind the Apply.
func TestPersistDoesNotBlockReads(t *testing.T) {
	t.Parallel()
	g := newGenerator(t, 41)
	for range 600 {
		g.next()
	}
	f := g.a.f
	var jobs int
	f.Read(func(v fsm.View) { jobs = len(v.Jobs()) })
	if jobs < 20 {
		t.Fatalf("the generated state holds %d jobs, too few to persist in several chunks", jobs)
	}
	submit := g.cmd(fsm.SubmitType, fsm.Submit{At: at(700), Owner: "u", Spec: fsm.JobSpec{Binaries: map[string]string{fsm.AnyKey: "/bin/true"}}})
	index, _ := f.Watch()
	applied := make(chan struct{})
	checked := false
	fsm.SetChunkHook(f, func() {
		if checked {
			return
		}
		checked = true
		go func() {
			defer close(applied)
			f.Apply(&raft.Log{Type: raft.LogCommand, Index: index + 1, Data: submit})
		}()
		testwait.For(t, 30*time.Second, "the Apply waiting for Persist's chunk", func() bool {
			return applyWaiting(t)
		})
		read := make(chan struct{})
		go func() {
			defer close(read)
			f.Read(func(v fsm.View) { _ = v.MachineCount() })
		}()
		testwait.For(t, 30*time.Second, "a read while Persist holds a chunk and an Apply waits", func() bool {
			select {
			case <-read:
				return true
			default:
				return false
			}
		})
		select {
		case <-applied:
			t.Fatalf("the Apply went through while Persist held its chunk")
		default:
		}
	})
	defer fsm.SetChunkHook(f, nil)
	persistWhile(t, f, 4, nil)
	if !checked {
		t.Fatalf("Persist never called its chunk hook")
	}
	testwait.For(t, 30*time.Second, "the Apply once Persist let go", func() bool {
		select {
		case <-applied:
			return true
		default:
			return false
		}
	})
	if now, _ := f.Watch(); now != index+1 {
		t.Errorf("applied index %d after the Apply during Persist, want %d", now, index+1)
	}
}

// applyWaiting reports whether a goroutine is blocked in FSM.Apply on a
// mutex, as the runtime's stack dump shows it.
func applyWaiting(t *testing.T) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, gr := range strings.Split(string(buf), "\n\n") {
		if (strings.Contains(gr, "[sync.Mutex.Lock") || strings.Contains(gr, "[sync.RWMutex.Lock")) && strings.Contains(gr, "fsm.(*FSM).applyOne") {
			return true
		}
	}
	return false
}

// TestSnapshotWhileApplyingEveryKind changes, while Persist is past the
// first job, a job through each Apply path the generated logs rarely
// reach with a snapshot running: a lease that expires (a restartable
// attempt started again, another made unknown) and one restored, a
// dependency's end releasing one held job and cancelling another, a cron
// firing and kept outputs. The snapshot is the state at its index.
func TestSnapshotWhileApplyingEveryKind(t *testing.T) {
	t.Parallel()
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	a.join("m2", "x86_64", 8)
	a.join("m3", "x86_64", 8)
	first := a.submit("first", 1) // written before the changes start
	a.place(asg(first, 0, "m1"))
	a.register(first, 0, "m1", 100)
	restartable := spec("restartable", 1)
	restartable.Restart = fsm.RestartAlways
	rjob := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: restartable}).JobID
	other := a.submit("other", 1)
	dep := a.submit("dep", 1)
	after := spec("after", 1)
	after.AfterOK = []uint64{dep}
	released := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: after}).JobID
	notOK := spec("notok", 1)
	notOK.AfterNotOK = []uint64{dep}
	cancelled := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: notOK}).JobID
	cron := spec("cron", 1)
	cron.Cron = "@every 1m"
	cronJob := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: cron}).JobID
	outputs := a.submit("outputs", 1)
	back := a.submit("back", 1)
	a.place(asg(rjob, 0, "m1"), asg(other, 0, "m1"), asg(dep, 0, "m2"), asg(outputs, 0, "m2"), asg(back, 0, "m3"))
	for _, j := range []struct {
		id      uint64
		machine string
	}{{rjob, "m1"}, {other, "m1"}, {dep, "m2"}, {outputs, "m2"}, {back, "m3"}} {
		a.register(j.id, 0, j.machine, 200+int(j.id))
	}
	a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(5), Machine: "m3"}) // back is unknown
	if s := a.instance(back, 0).State; s != fsm.InstanceUnknown {
		t.Fatalf("job %d on m3 is %s after its lease expired, want unknown", back, s)
	}

	want := fsm.EncodeAtOnce(a.f)
	changed := false
	got, copies := persistWhile(t, a.f, 1, func(written int) {
		if changed {
			return
		}
		changed = true
		a.mustOK(fsm.LeaseExpiredType, fsm.LeaseExpired{At: at(10), Machine: "m1"})
		a.mustOK(fsm.LeaseRestoredType, fsm.LeaseRestored{At: at(11), Machine: "m3",
			Running: []fsm.AttemptRef{{JobID: back, Instance: 0, Attempt: 1}}})
		a.term(dep, 0, "m2", 0)
		a.mustOK(fsm.CronFireType, fsm.CronFire{At: at(61), JobID: cronJob, Scheduled: at(61)})
		a.mustOK(fsm.OutputsKeptType, fsm.OutputsKept{At: at(12), JobID: outputs, Instance: 0, Attempt: 1, Machine: "m2",
			Blob: "b", Size: 1, Files: []string{"out"}})
	})
	checkCaptured(t, a.f, got, want, copies)
	for _, c := range []struct {
		id   uint64
		want string
	}{{rjob, fsm.JobQueued}, {other, fsm.JobRunning}, {released, fsm.JobQueued}, {cancelled, fsm.JobCancelled}, {back, fsm.JobRunning}} {
		if s := a.job(c.id).State(); s != c.want {
			t.Errorf("job %d is %s after the changes, want %s", c.id, s, c.want)
		}
	}
	if j := a.job(cronJob); j.Cron == nil || len(j.Cron.Runs) != 1 {
		t.Errorf("cron job %d has no run after its firing", cronJob)
	}
	if copies < 7 {
		t.Errorf("the capture copied %d jobs, want every one changed but the first (7)", copies)
	}
}
