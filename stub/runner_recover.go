package stub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/netmgr/netmgr/client"
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
func (r *runner) recover(records map[attemptKey]attemptRecord) error {
	removeKits(r.execDir)
	removeKits(filepath.Join(r.dataDir, attemptsDir))
	entries, err := os.ReadDir(filepath.Join(r.dataDir, attemptsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read supervisor dirs: %w", err)
	}
	onDisk := make(map[attemptKey]bool, len(entries))
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
			// Started by a stub without supervisors: its end was never
			// seen, and cannot be any more.
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
func (r *runner) recovered(k attemptKey, rec attemptRecord) *attempt {
	a := &attempt{ready: make(chan struct{}), rec: rec, dir: r.supDir(k), restartable: rec.Restartable, exited: rec.Ended}
	close(a.ready)
	r.mu.Lock()
	r.attempts[k] = a
	r.mu.Unlock()
	return a
}

// reattach records the end of attempt k if its supervisor has written it,
// and otherwise watches the supervisor if it still runs, or reports the
// attempt lost.
func (r *runner) reattach(k attemptKey, a *attempt) {
	if res, err := readResult(a.dir); err == nil {
		r.log.Info("attempt ended while no stub ran", "attempt", k)
		r.finish(k, a, res)
		return
	}
	if err := supervisorAlive(a.dir); err != nil {
		if res, rerr := readResult(a.dir); rerr == nil {
			r.finish(k, a, res)
		} else {
			r.lost(k, a, err)
		}
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
func (r *runner) adopt(k attemptKey) {
	dir := r.supDir(k)
	var st supervisorState
	if err := readJSONFile(filepath.Join(dir, stateFile), &st); err != nil {
		res, rerr := readResult(dir)
		if rerr != nil {
			// Nothing ran: the Start will be retried and start afresh.
			r.log.Info("removing the directory of a supervisor that never started a job", "attempt", k)
			_ = os.RemoveAll(dir)
			return
		}
		a := r.recovered(k, attemptRecord{At: res.EndedAt})
		r.finish(k, a, res) // the exec failed
		return
	}
	restartable := st.Restartable
	if !restartable { // a supervisor of one attempt, or of an older stub, has it in the spec
		var spec supervisorSpec
		_ = readJSONFile(filepath.Join(dir, specFile), &spec)
		restartable = spec.Restartable
	}
	rec := attemptRecord{PID: st.Job.PID, At: st.StartedAt, Restartable: restartable}
	ev := r.event(k, client.ChildRegister, st.StartedAt)
	ev.PID = st.Job.PID
	if err := r.out.record(k, &rec, ev); err != nil {
		r.log.Error("adopt attempt: REGISTER not recorded", "attempt", k, "err", err)
	}
	r.log.Info("adopted a supervisor started by an earlier stub", "attempt", k, "pid", st.Job.PID)
	r.reattach(k, r.recovered(k, rec))
}
