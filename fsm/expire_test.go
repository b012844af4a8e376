package fsm_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// endAt places, starts and ends instance 0 of job id on m1 with code at
// time end.
func (a *applier) endAt(id uint64, code int, end time.Time) {
	a.tb.Helper()
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", int(id))
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: end, JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: code})
}

// expire applies a JobsExpire at time now with cutoff before and count
// keep and returns how many jobs it removed.
func (a *applier) expire(now, before time.Time, keep int) int {
	a.tb.Helper()
	return a.mustOK(fsm.JobsExpireType, fsm.JobsExpire{At: now, Before: before, Keep: keep}).Affected
}

// jobIDs lists the ids of the jobs the database holds.
func (a *applier) jobIDs() []uint64 {
	var out []uint64
	a.f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			out = append(out, j.ID)
		}
	})
	return out
}

// eventsOf returns the events of kind applied after index.
func (a *applier) eventsOf(kind string, after uint64) []fsm.Event {
	var out []fsm.Event
	a.f.Read(func(v fsm.View) {
		for _, e := range v.EventsSince(after) {
			if e.Kind == kind {
				out = append(out, e)
			}
		}
	})
	return out
}

func TestJobsExpireRemovesExactlyTheEndedJobs(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	old := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "alice", Spec: spec("old", 1), IdempotencyKey: "k-old"}).JobID
	a.endAt(old, 0, at(10))
	failed := a.submit("failed", 1)
	a.endAt(failed, 3, at(20))
	recent := a.submit("recent", 1)
	a.endAt(recent, 0, at(200))
	running := a.submit("running", 1)
	a.place(asg(running, 0, "m1"))
	a.register(running, 0, "m1", 77)
	queued := a.submit("queued", 2)
	killed := a.submit("killed", 1) // killed while queued: ends at the kill
	a.mustOK(fsm.KillType, fsm.Kill{At: at(30), JobID: killed, By: "alice"})
	half := a.submit("half", 2) // one instance ended, one running
	a.place(asg(half, 0, "m1"), asg(half, 1, "m1"))
	a.register(half, 0, "m1", 5)
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(11), JobID: half, Instance: 0, Attempt: 1, Machine: "m1"})

	var due []uint64
	a.f.Read(func(v fsm.View) { due = v.ExpiredJobs(at(100), 0) })
	if want := []uint64{old, failed, killed}; !slices.Equal(due, want) {
		t.Fatalf("ExpiredJobs before %v: got %v, want %v", at(100), due, want)
	}
	ix := a.next
	if n := a.expire(at(300), at(100), 0); n != 3 {
		t.Fatalf("JobsExpire removed %d jobs, want 3", n)
	}
	if got, want := a.jobIDs(), []uint64{recent, running, queued, half}; !slices.Equal(got, want) {
		t.Errorf("jobs after expiry: %v, want %v", got, want)
	}
	evs := a.eventsOf(fsm.EventJobsExpired, ix-1)
	if len(evs) != 1 || evs[0].Index != ix || !strings.HasPrefix(evs[0].Detail, "3 finished jobs removed") {
		t.Errorf("events: got %+v, want one jobs-expired event at %d counting 3", evs, ix)
	}
	a.f.Read(func(v fsm.View) {
		if _, ok := v.JobByName("old"); ok {
			t.Errorf("the removed job is still found by name")
		}
		if len(v.JobsNamed("failed")) != 0 {
			t.Errorf("the removed job is still listed by name")
		}
		if !v.JobExpired(old) || v.JobExpired(recent) || v.JobExpired(99) {
			t.Errorf("JobExpired: removed %v, kept %v, never submitted %v; want true, false, false",
				v.JobExpired(old), v.JobExpired(recent), v.JobExpired(99))
		}
	})
	// Its idempotency key is free again: a retry that late is a new job.
	res := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(301), Owner: "alice", Spec: spec("old", 1), IdempotencyKey: "k-old"})
	if res.Existing || res.JobID == old {
		t.Errorf("submit with the removed job's key: got %+v, want a new job", res)
	}
	// Killing or restarting a removed job names no job.
	wantErr(t, a.apply(fsm.KillType, fsm.Kill{At: at(302), JobID: old, By: "alice"}).Err, fsm.ErrNoSuchJob)
	wantErr(t, a.apply(fsm.RestartJobType, fsm.JobControl{At: at(302), JobID: failed, By: "alice"}).Err, fsm.ErrNoSuchJob)

	// The same entry again (a retried proposal) removes nothing more.
	before := stateBytes(t, a.f)
	ix = a.next
	if n := a.expire(at(300), at(100), 0); n != 0 {
		t.Errorf("the same JobsExpire again removed %d jobs, want 0", n)
	}
	assertUnchanged(t, a.f, before)
	if evs := a.eventsOf(fsm.EventJobsExpired, ix-1); len(evs) != 0 {
		t.Errorf("an entry that removed nothing recorded %+v", evs)
	}
	checkInvariants(t, a.f, -1)
}

func TestJobsExpireKeepsACount(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	var ids []uint64
	// Ids and end times in opposite orders: the count goes by end time.
	for i := range 5 {
		ids = append(ids, a.submit(fmt.Sprintf("j%d", i), 1))
	}
	for i, id := range ids {
		a.endAt(id, 0, at(100-10*i))
	}
	live := a.submit("live", 1)
	if n := a.expire(at(200), time.Time{}, 2); n != 3 {
		t.Fatalf("keep 2 of 5: removed %d, want 3", n)
	}
	if got, want := a.jobIDs(), []uint64{ids[0], ids[1], live}; !slices.Equal(got, want) {
		t.Errorf("jobs kept: %v, want the two latest ended %v and the live one", got, want)
	}
	// Age and count together: whichever removes more.
	if n := a.expire(at(200), at(95), 5); n != 1 {
		t.Errorf("cutoff at 95 with room for 5: removed %d, want 1 (the job that ended at 90)", n)
	}
	if n := a.expire(at(200), time.Time{}, 0); n != 0 {
		t.Errorf("no cutoff and no count removed %d jobs", n)
	}
}

func TestJobsExpireKeepsWhatHeldJobsWaitFor(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	x := a.submit("x", 1)
	y := a.submit("y", 1)
	held := a.submitAfter("held", nil, []uint64{x, y}, nil).JobID
	a.endAt(x, 0, at(10))
	// x ended long ago, but held still waits for y and will read x's
	// outcome again when y ends: x stays.
	if n := a.expire(at(500), at(400), 0); n != 0 {
		t.Fatalf("removed %d jobs while a held job waits for them", n)
	}
	if st := a.job(held).State(); st != fsm.JobHeld {
		t.Fatalf("held job is %s, want held", st)
	}
	a.endAt(y, 0, at(20))
	if st := a.job(held).State(); st != fsm.JobQueued {
		t.Fatalf("after both ended the held job is %s, want queued", st)
	}
	if n := a.expire(at(500), at(400), 0); n != 2 {
		t.Errorf("once decided: removed %d, want x and y", n)
	}
	if got := a.jobIDs(); !slices.Equal(got, []uint64{held}) {
		t.Errorf("jobs left: %v, want only %d", got, held)
	}
	// A dependency on a removed job is refused at submit: it no longer
	// exists.
	res := a.submitAfter("late", []uint64{x}, nil, nil)
	wantErr(t, res.Err, fsm.ErrNoSuchJob)
	checkDependencyInvariants(t, a.f)
}

func TestJobsExpireCronJobs(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 8)
	live := a.submitCron("live", "@every 2s", "", fsm.OverlapAllow)
	ended := a.submitCron("ended", "@every 2s", "", fsm.OverlapAllow)
	liveRun := a.fire(live, at(3)).JobID
	r1 := a.fire(ended, at(3)).JobID
	r2 := a.fire(ended, at(5)).JobID
	a.endAt(liveRun, 0, at(6))
	a.endAt(r1, 0, at(7))
	a.place(asg(r2, 0, "m1"))
	a.register(r2, 0, "m1", 9)
	a.mustOK(fsm.KillType, fsm.Kill{At: at(8), JobID: ended, By: "alice"}) // the schedule only

	// The runs that ended go; the live schedule stays; the ended one
	// stays while its run r2 runs.
	if n := a.expire(at(500), at(400), 0); n != 2 {
		t.Fatalf("removed %d, want the two ended runs", n)
	}
	if got, want := a.jobIDs(), []uint64{live, ended, r2}; !slices.Equal(got, want) {
		t.Fatalf("jobs: %v, want %v", got, want)
	}
	// The live schedule fires on without its old run.
	if next := a.fire(live, at(9)).JobID; next == 0 {
		t.Errorf("the live schedule no longer fires after its run was removed")
	}
	// Once r2 ended, r2 and its template go in the same entry.
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(12), JobID: r2, Instance: 0, Attempt: 1, Machine: "m1"})
	if n := a.expire(at(600), at(400), 0); n != 2 {
		t.Errorf("removed %d, want r2 and its ended schedule", n)
	}
	if slices.Contains(a.jobIDs(), ended) || !slices.Contains(a.jobIDs(), live) {
		t.Errorf("jobs: %v, want the ended schedule gone and the live one kept", a.jobIDs())
	}
	var crons []uint64
	a.f.Read(func(v fsm.View) {
		for _, j := range v.CronJobs() {
			crons = append(crons, j.ID)
		}
	})
	if !slices.Equal(crons, []uint64{live}) {
		t.Errorf("CronJobs: %v, want [%d]", crons, live)
	}
}

func TestJobsExpireKeepsPendingMail(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	id := a.submitMail("alice", fsm.MailOwner, nil, "")
	a.endAt(id, 1, at(10))
	want := a.pending()
	if len(want) != 1 {
		t.Fatalf("pending mail: %+v, want the fail mail", want)
	}
	if n := a.expire(at(500), at(400), 0); n != 1 {
		t.Fatalf("removed %d, want the job", n)
	}
	// The message was written when the job ended: it goes out all the
	// same, and MailSent still records it.
	if got := a.pending(); len(got) != 1 || got[0].ID != want[0].ID || got[0].Body != want[0].Body {
		t.Errorf("pending mail after the job left: %+v, want %+v", got, want)
	}
	a.mustOK(fsm.MailSentType, fsm.MailSent{At: at(501), ID: want[0].ID})
	if got := a.pending(); len(got) != 0 {
		t.Errorf("pending after MailSent: %+v", got)
	}
}

func TestJobsExpireSnapshotRoundTrip(t *testing.T) {
	a := richState(t)
	var before int
	a.f.Read(func(v fsm.View) { before = len(v.Jobs()) })
	if n := a.expire(t0.Add(1000*time.Hour), t0.Add(999*time.Hour), 0); n == 0 {
		t.Fatalf("the rich state has no job to expire")
	}
	var after int
	a.f.Read(func(v fsm.View) { after = len(v.Jobs()) })
	if after == before || after == 0 {
		t.Fatalf("jobs: %d before, %d after, want some removed and some kept", before, after)
	}
	checkInvariants(t, a.f, -1)
	checkRoundTrip(t, a.f, -1)
	data := snapshotBytes(t, a.f)
	b := restored(t, data)
	if got, want := readIndexes(b), readIndexes(a.f); !got.equal(want) {
		t.Errorf("indexes after restore:\ngot  %+v\nwant %+v", got, want)
	}
	// A submit after the restore gets the same id on both: the next id
	// is kept even when the highest job left.
	c := &applier{tb: t, f: b, next: a.next}
	ra := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(5000), Owner: "alice", Spec: spec("after", 1)})
	rb := c.mustOK(fsm.SubmitType, fsm.Submit{At: at(5000), Owner: "alice", Spec: spec("after", 1)})
	if ra.JobID != rb.JobID {
		t.Errorf("next job id: %d live, %d restored", ra.JobID, rb.JobID)
	}
	if !bytes.Equal(snapshotBytes(t, a.f), snapshotBytes(t, c.f)) {
		t.Errorf("live and restored replicas differ after the same submit")
	}
}

// TestJobsExpireGenerated runs the generated log, whose late part holds
// JobsExpire entries (expireCommand), and checks the indexes and a
// restore after each.
func TestJobsExpireGenerated(t *testing.T) {
	g := newGenerator(t, 7)
	removed := 0
	for g.step < 2600 {
		n := len(g.log)
		g.next()
		for _, data := range g.log[n:] {
			if fsm.MessageType(data[0]) != fsm.JobsExpireType {
				continue
			}
			removed++
			checkInvariants(t, g.a.f, g.step)
			checkQueuesAndReservations(t, g.a.f, g.step)
			checkRoundTrip(t, g.a.f, g.step)
			checkDependencyInvariants(t, g.a.f)
		}
	}
	if removed == 0 {
		t.Fatalf("the generated log holds no JobsExpire")
	}
	var left int
	g.a.f.Read(func(v fsm.View) {
		for _, j := range v.Jobs() {
			if v.JobExpired(j.ID) {
				t.Errorf("job %d is held and expired", j.ID)
			}
		}
		for id := uint64(1); id < 1<<20; id++ {
			if _, ok := v.Job(id); !ok && !v.JobExpired(id) {
				break
			}
			if v.JobExpired(id) {
				left++
			}
		}
	})
	if left == 0 {
		t.Errorf("the generated JobsExpire entries removed no job")
	}
}

// expireCommand is a JobsExpire of the jobs that ended over 150 steps
// before now, every third one with a count as well. Chosen from the step,
// not g.r, so the rest of the log stays the one the coverage test expects.
func (g *generator) expireCommand(now time.Time) []byte {
	c := fsm.JobsExpire{At: now, Before: now.Add(-150 * time.Second)}
	if g.step/31%3 == 0 {
		c.Keep = 40
	}
	return g.cmd(fsm.JobsExpireType, c)
}
