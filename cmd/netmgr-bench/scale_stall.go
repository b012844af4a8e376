package main

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
)

// The traffic the stall measurement puts on the FSM while one snapshot is
// taken, as a serving leader of a large pool sees it (issue 36 item 5):
// lease renewals (each one fsm.Read of the machine and its owner
// settings, as server/http_lease.go), reads of a job (the API's GET), and
// commands through one applying goroutine that also takes the snapshot,
// as hashicorp/raft's FSM goroutine does: submits, and kills of running
// jobs, which change records the snapshot is writing.
const (
	stallRenewEvery  = 500 * time.Microsecond // 2,000 renewals a second
	stallReadEvery   = 2 * time.Millisecond   // 500 job reads a second
	stallSubmitEvery = 5 * time.Millisecond   // 200 submits a second
	stallKillEvery   = 20 * time.Millisecond  // 50 kills a second
	// stallMargin is how long the traffic runs before the snapshot is
	// asked for and after it is persisted.
	stallMargin = 300 * time.Millisecond
	// stallBatch is the most commands applied together, raft's
	// MaxAppendEntries default.
	stallBatch = 64
)

// stallTimes is what one snapshot under traffic measured: the latency of
// each request scheduled while the snapshot ran, from the time it was due
// (so a request held up delays those behind it, and they count too), in
// milliseconds.
type stallTimes struct {
	renew, read, submit []float64
	snap                snapshotTimes
}

// stallRequest is one command for the applying goroutine, or the
// snapshot (cmd nil).
type stallRequest struct {
	due  time.Time
	cmd  []byte
	done chan struct{}
}

// snapshotUnderLoad takes f's snapshot into data while lease renewals,
// job reads, submits and kills run against f, and returns their
// latencies over the snapshot (from its request to its persisted end).
// With baseline positive it takes no snapshot: the same traffic runs for
// that long, and the latencies are those of the machine as loaded as it
// is, without a snapshot.
// machines and jobs name what exists; the jobs from firstLive on are
// unfinished. index is f's applied index; the commands applied here go
// on from it, and the new index is returned.
func snapshotUnderLoad(f *fsm.FSM, data *dataDir, machines []string, jobs, firstLive, index uint64, baseline time.Duration) (stallTimes, uint64, error) {
	var (
		mu             sync.Mutex
		from, to       time.Time // the snapshot's window; zero until known
		renews, reads  []time.Duration
		renewAt        []time.Time
		readAt         []time.Time
		submits        []time.Duration
		submitAt       []time.Time
		stop           = make(chan struct{})
		wg             sync.WaitGroup
		reqs           = make(chan stallRequest, 1024)
		snapErr        error
		st             stallTimes
		snap           raft.FSMSnapshot
		snapshotIndex  uint64
		applyErr       error
		lastApplyIndex = index
	)
	paced := func(every time.Duration, fn func(due time.Time)) {
		defer wg.Done()
		due := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
			fn(due)
			due = due.Add(every)
		}
	}
	wg.Add(4)
	n := 0
	go paced(stallRenewEvery, func(due time.Time) {
		name := machines[n%len(machines)]
		n++
		f.Read(func(v fsm.View) {
			if m, ok := v.Machine(name); ok {
				db, _ := v.Database()
				db.OwnerSettings(&m.MachineFacts)
			}
		})
		took := time.Since(due)
		mu.Lock()
		renews, renewAt = append(renews, took), append(renewAt, due)
		mu.Unlock()
	})
	k := uint64(0)
	go paced(stallReadEvery, func(due time.Time) {
		id := 1 + (k*7919)%jobs
		k++
		f.Read(func(v fsm.View) {
			if j, ok := v.Job(id); ok {
				_ = j.State()
			}
		})
		took := time.Since(due)
		mu.Lock()
		reads, readAt = append(reads, took), append(readAt, due)
		mu.Unlock()
	})
	submit, err := fsm.Encode(fsm.SubmitType, fsm.Submit{At: time.Now().UTC(), Owner: "bench",
		Spec: fsm.JobSpec{Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: 1}})
	if err != nil {
		return st, index, err
	}
	go paced(stallSubmitEvery, func(due time.Time) {
		done := make(chan struct{})
		reqs <- stallRequest{due: due, cmd: submit, done: done}
		<-done
		took := time.Since(due)
		mu.Lock()
		submits, submitAt = append(submits, took), append(submitAt, due)
		mu.Unlock()
	})
	kill := firstLive
	go paced(stallKillEvery, func(due time.Time) {
		cmd, err := fsm.Encode(fsm.KillType, fsm.Kill{At: time.Now().UTC(), JobID: kill, By: "bench", Signal: "TERM"})
		kill++
		if err != nil || kill >= jobs {
			return
		}
		reqs <- stallRequest{due: due, cmd: cmd}
	})
	// The applying goroutine: commands and the snapshot, in order, the
	// commands that wait applied together (ApplyBatch) as raft hands a
	// BatchingFSM what committed meanwhile.
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		var pending *stallRequest
		for {
			var r stallRequest
			if pending != nil {
				r, pending = *pending, nil
			} else {
				var ok bool
				if r, ok = <-reqs; !ok {
					return
				}
			}
			if r.cmd == nil {
				start := time.Now()
				snap, snapErr = f.Snapshot()
				st.snap.locked = time.Since(start)
				snapshotIndex, _ = f.Watch()
				close(r.done)
				continue
			}
			batch := []stallRequest{r}
		fill:
			for len(batch) < stallBatch {
				select {
				case next, ok := <-reqs:
					if !ok {
						break fill
					}
					if next.cmd == nil {
						pending = &next
						break fill
					}
					batch = append(batch, next)
				default:
					break fill
				}
			}
			logs := make([]*raft.Log, len(batch))
			for i := range batch {
				lastApplyIndex++
				logs[i] = &raft.Log{Type: raft.LogCommand, Index: lastApplyIndex, Data: batch[i].cmd}
			}
			for i, out := range f.ApplyBatch(logs) {
				if res := out.(*fsm.Result); res.Err != nil && applyErr == nil && batch[i].done != nil {
					applyErr = res.Err // a kill may find its job ended; a submit may not fail
				}
				if batch[i].done != nil {
					close(batch[i].done)
				}
			}
		}
	}()

	time.Sleep(stallMargin)
	start := time.Now()
	mu.Lock()
	from = start
	mu.Unlock()
	var perr error
	if baseline > 0 {
		time.Sleep(baseline)
	} else {
		taken := make(chan struct{})
		reqs <- stallRequest{due: start, done: taken}
		<-taken
		if snapErr == nil {
			perr = persistAt(data, snap, snapshotIndex, &st.snap)
			snap.Release()
		}
	}
	st.snap.total = time.Since(start)
	mu.Lock()
	to = time.Now()
	mu.Unlock()
	time.Sleep(stallMargin)
	close(stop)
	wg.Wait()
	close(reqs)
	<-applied
	switch {
	case snapErr != nil:
		return st, lastApplyIndex, fmt.Errorf("snapshot: %w", snapErr)
	case perr != nil:
		return st, lastApplyIndex, perr
	case applyErr != nil:
		return st, lastApplyIndex, fmt.Errorf("submit during the snapshot: %w", applyErr)
	}
	within := func(ds []time.Duration, at []time.Time) []float64 {
		var out []float64
		for i, d := range ds {
			if !at[i].Before(from) && at[i].Before(to) {
				out = append(out, float64(d)/float64(time.Millisecond))
			}
		}
		slices.Sort(out)
		return out
	}
	st.renew, st.read, st.submit = within(renews, renewAt), within(reads, readAt), within(submits, submitAt)
	return st, lastApplyIndex, nil
}

// persistAt persists snap, taken at index, into the store and records
// its size and the time Persist took.
func persistAt(d *dataDir, snap raft.FSMSnapshot, index uint64, st *snapshotTimes) error {
	sink, err := d.store.Create(raft.SnapshotVersionMax, index, scaleTerm, d.config, 1, d.trans)
	if err != nil {
		return fmt.Errorf("create snapshot: %w", err)
	}
	if err := snap.Persist(sink); err != nil {
		return fmt.Errorf("persist snapshot: %w", err)
	}
	size, err := d.size(sink.ID())
	if err != nil {
		return err
	}
	st.bytes = size
	return nil
}
