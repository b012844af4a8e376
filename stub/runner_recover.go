package stub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// recover takes over the attempts an earlier stub on the same DataDir
// started: records are the outbox's attempt records. An attempt already
// reported as ended is only remembered, so a repeated Start starts
// nothing. For every other one it finds the supervisor by its directory:
// a result there is recorded at once; a supervisor that still runs (its
// pid, start time and boot id verify) is reattached, so that signals reach
// the job again and its end is reported; a supervisor gone without a
// result makes the attempt lost. A supervisor directory without a record
// (the earlier stub died between starting the supervisor and recording
// the CHILD_REGISTER) is adopted: its REGISTER is recorded now. recover
// runs in New, before the API serves.
func (r *runner) recover(records map[client.AttemptRef]outbox.Record) error {
	removeKits(r.execDir)
	removeKits(filepath.Join(r.dataDir, attemptsDir))
	entries, err := os.ReadDir(filepath.Join(r.dataDir, attemptsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read supervisor dirs: %w", err)
	}
	onDisk := make(map[client.AttemptRef]bool, len(entries))
	for _, e := range entries {
		if k, ok := parseAttemptName(e.Name()); ok && e.IsDir() {
			onDisk[k] = true
		}
	}
	for k, rec := range records {
		a := r.recovered(k, rec)
		switch {
		case rec.Ended:
		case !onDisk[k]:
			// No supervisor directory (removed or lost): its end
			// cannot be known.
			r.lost(k, a, errors.New("no supervisor directory"))
		default:
			r.reattach(k, a)
		}
	}
	for k := range onDisk {
		if _, ok := records[k]; !ok {
			r.adopt(k)
		}
	}
	return nil
}

// recovered adds attempt k, known from an earlier stub, to the runner.
func (r *runner) recovered(k client.AttemptRef, rec outbox.Record) *attempt {
	a := &attempt{ready: make(chan struct{}), rec: rec, dir: r.supDir(k), restartable: rec.Restartable, ownerPolicy: rec.OwnerPolicy, exited: rec.Ended}
	close(a.ready)
	r.mu.Lock()
	r.attempts[k] = a
	r.mu.Unlock()
	return a
}

// reattach records the end of attempt k if its supervisor has written it,
// or reports the attempt lost if its supervisor is gone (settle), and
// otherwise watches the supervisor.
func (r *runner) reattach(k client.AttemptRef, a *attempt) {
	if len(a.rec.CopyOut) > 0 || len(a.rec.Checkpoint) > 0 {
		// Its end waits for its outputs to be kept, which needs the
		// servers, known only once the stub runs: not while it starts.
		r.watchers.Go(func() { r.reattachNow(k, a) })
		return
	}
	r.reattachNow(k, a)
}

// reattachNow is reattach, in the caller's goroutine.
func (r *runner) reattachNow(k client.AttemptRef, a *attempt) {
	if r.settle(k, a) {
		return
	}
	r.mu.Lock()
	a.supervised, a.pgid = true, a.rec.PID
	r.mu.Unlock()
	r.log.Info("reattached to the supervisor of a running attempt", "attempt", k, "pid", a.rec.PID)
	r.watch(k, a)
}

// adopt takes over the supervisor directory of attempt k, which no record
// names: the supervisor started, but the stub that started it died before
// recording its CHILD_REGISTER, so the Start was never answered.
func (r *runner) adopt(k client.AttemptRef) {
	dir := r.supDir(k)
	st, err := supervisor.Adopt(dir)
	if err != nil {
		res, rerr := r.sup.Outcome(dir)
		if rerr != nil {
			// Nothing ran: the Start will be retried and start afresh.
			r.log.Info("removing the directory of a supervisor that never started a job", "attempt", k)
			_ = os.RemoveAll(dir)
			_ = os.RemoveAll(r.attemptDir(k)) // made by that Start, which comes again
			return
		}
		a := r.recovered(k, outbox.Record{At: res.EndedAt})
		r.finish(k, a, res) // the exec failed
		return
	}
	rec := outbox.Record{PID: st.PID, At: st.StartedAt, Restartable: st.Restartable}
	if err := r.out.Record(k, &rec, r.register(k, rec)); err != nil {
		r.log.Error("adopt attempt: REGISTER not recorded", "attempt", k, "err", err)
	}
	r.log.Info("adopted a supervisor started by an earlier stub", "attempt", k, "pid", st.PID)
	r.reattach(k, r.recovered(k, rec))
}

// parseAttemptName parses the name of a supervisor directory, which
// client.AttemptRef.String gives.
func parseAttemptName(name string) (client.AttemptRef, bool) {
	var k client.AttemptRef
	var rest string
	n, _ := fmt.Sscanf(name, "%d.%d.%d%s", &k.JobID, &k.Instance, &k.Attempt, &rest)
	return k, n == 3 && k.String() == name
}
