package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/netmgr/netmgr/fsm"
)

// submitCron submits a cron job of /bin/true at at(1) and returns its id.
func (a *applier) submitCron(name, expr, catchup, overlap string) uint64 {
	a.tb.Helper()
	return a.mustOK(fsm.SubmitCronType, fsm.Submit{At: at(1), Owner: "alice", Spec: withCron(spec(name, 1), expr, catchup, overlap)}).JobID
}

// fire applies a CronFire of job id for time t.
func (a *applier) fire(id uint64, t time.Time) *fsm.Result {
	a.tb.Helper()
	return a.mustOK(fsm.CronFireType, fsm.CronFire{At: t, JobID: id, Scheduled: t})
}

// cronOf returns a copy of cron job id's state.
func (a *applier) cronOf(id uint64) fsm.CronState {
	a.tb.Helper()
	j := a.job(id)
	if j.Cron == nil {
		a.tb.Fatalf("job %d is not a cron job", id)
	}
	c := *j.Cron
	c.Runs, c.Skips = slices.Clone(c.Runs), slices.Clone(c.Skips)
	return c
}

// every2s is the schedule of "@every 2s".
func every2s(t *testing.T) cron.Schedule {
	t.Helper()
	s, err := cron.ParseStandard("@every 2s")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return s
}

func TestCronFireIsIdempotent(t *testing.T) {
	a := newApplier(t)
	id := a.submitCron("tick", "@every 2s", "", fsm.OverlapAllow)
	if j := a.job(id); j.State() != fsm.JobScheduled || len(j.Instances) != 0 {
		t.Fatalf("cron job: state %s with %d instances, want scheduled with none", j.State(), len(j.Instances))
	}
	res := a.fire(id, at(3))
	if res.JobID == 0 || res.Stale {
		t.Fatalf("first firing: got JobID %d Stale %v, want a run", res.JobID, res.Stale)
	}
	run := a.job(res.JobID)
	if run.Name != "tick.alice#1" || run.CronJob != id || !run.Scheduled.Equal(at(3)) || run.State() != fsm.JobQueued {
		t.Errorf("run: name %q cron job %d scheduled %v state %s, want tick.alice#1, %d, %v, queued", run.Name, run.CronJob, run.Scheduled, run.State(), id, at(3))
	}
	if want := "NETMGR_SCHEDULED_TIME=" + at(3).Format(time.RFC3339); !slices.Contains(run.Spec.Env, want) || run.Spec.Cron != "" {
		t.Errorf("run env %v cron %q, want %s and no cron", run.Spec.Env, run.Spec.Cron, want)
	}
	// The same firing again (a new leader, a retried proposal), and an
	// older one, change nothing.
	for _, t2 := range []time.Time{at(3), at(2), at(1)} {
		before := snapshotBytes(t, a.f)
		if res := a.fire(id, t2); !res.Stale || res.JobID != 0 {
			t.Errorf("firing for %v again: got Stale %v JobID %d, want stale", t2, res.Stale, res.JobID)
		}
		if after := snapshotBytes(t, a.f); !bytes.Equal(bytes.SplitN(after, []byte("\n"), 2)[1], bytes.SplitN(before, []byte("\n"), 2)[1]) {
			t.Errorf("a duplicate firing changed the state")
		}
	}
	if res := a.fire(id, at(5)); a.job(res.JobID).Name != "tick.alice#2" {
		t.Errorf("second run named %q, want tick.alice#2", a.job(res.JobID).Name)
	}
	if c := a.cronOf(id); len(c.Runs) != 2 || !c.Through.Equal(at(5)) || c.Skipped != 0 {
		t.Errorf("cron state %+v, want 2 runs through %v", c, at(5))
	}
}

func TestCronDueCatchup(t *testing.T) {
	sched := every2s(t)
	const grace = time.Second
	tests := []struct {
		name    string
		catchup string
		now     time.Time // the leader's clock; the job was submitted at at(1)
		runs    []time.Time
		skips   []string // "time reason-prefix"
		next    time.Time
	}{
		{"nothing due", fsm.CatchupLast, at(2), nil, nil, at(3)},
		{"on time", fsm.CatchupLast, at(3), []time.Time{at(3)}, nil, at(5)},
		{"late, last", fsm.CatchupLast, at(4), []time.Time{at(3)}, nil, at(5)},
		{"late, none", fsm.CatchupNone, at(4).Add(500 * time.Millisecond), nil, []string{"3 missed"}, at(5)},
		{"late within grace, none", fsm.CatchupNone, at(3).Add(grace), []time.Time{at(3)}, nil, at(5)},
		{"outage, last", fsm.CatchupLast, at(10), []time.Time{at(9)}, []string{"3 missed", "5 missed", "7 missed"}, at(11)},
		{"outage, none", fsm.CatchupNone, at(10).Add(500 * time.Millisecond), nil, []string{"3 missed", "5 missed", "7 missed", "9 missed"}, at(11)},
		{"outage ending on a time, none", fsm.CatchupNone, at(9), []time.Time{at(9)}, []string{"3 missed", "5 missed", "7 missed"}, at(11)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			id := a.submitCron("c", "@every 2s", tc.catchup, "")
			fire, next := fsm.CronDue(a.job(id), sched, tc.now, grace)
			if !next.Equal(tc.next) {
				t.Errorf("next: got %v, want %v", next, tc.next)
			}
			if fire != nil {
				a.mustOK(fsm.CronFireType, *fire)
			}
			c := a.cronOf(id)
			var runs []time.Time
			for _, r := range c.Runs {
				runs = append(runs, a.job(r).Scheduled)
			}
			if !slices.EqualFunc(runs, tc.runs, time.Time.Equal) {
				t.Errorf("runs scheduled %v, want %v", runs, tc.runs)
			}
			var skips []string
			for _, s := range c.Skips {
				skips = append(skips, fmt.Sprintf("%d %s", int(s.Scheduled.Sub(t0)/time.Second), strings.Fields(s.Reason)[0]))
			}
			for i := range skips {
				skips[i] = strings.TrimSuffix(skips[i], ":")
			}
			if !slices.Equal(skips, tc.skips) {
				t.Errorf("skips %v, want %v", skips, tc.skips)
			}
			// The leader asks again at once: nothing more is due.
			if again, _ := fsm.CronDue(a.job(id), sched, tc.now, grace); again != nil {
				t.Errorf("due again after the firing: %+v", again)
			}
		})
	}
}

func TestCronDueLongOutage(t *testing.T) {
	a := newApplier(t)
	id := a.submitCron("c", "@every 2s", "", "")
	fire, _ := fsm.CronDue(a.job(id), every2s(t), at(1+2*500), time.Second)
	if fire == nil || len(fire.Missed) != fsm.MaxCronMissed || fire.MissedMore != 499-fsm.MaxCronMissed {
		t.Fatalf("got %+v, want %d missed listed and %d more", fire, fsm.MaxCronMissed, 499-fsm.MaxCronMissed)
	}
	a.mustOK(fsm.CronFireType, *fire)
	if c := a.cronOf(id); c.Skipped != 499 || c.Missed != 499-fsm.MaxCronMissed || len(c.Runs) != 1 {
		t.Errorf("got skipped %d missed %d runs %d, want 499, %d, 1", c.Skipped, c.Missed, len(c.Runs), 499-fsm.MaxCronMissed)
	}
}

func TestCronOverlap(t *testing.T) {
	for _, tc := range []struct {
		overlap string
		runs    int
	}{{"", 1}, {fsm.OverlapSkip, 1}, {fsm.OverlapAllow, 2}} {
		t.Run("overlap="+tc.overlap, func(t *testing.T) {
			a := newApplier(t)
			a.join("m1", "x86_64", 4)
			id := a.submitCron("c", "@every 2s", "", tc.overlap)
			first := a.fire(id, at(3)).JobID
			a.place(asg(first, 0, "m1"))
			a.register(first, 0, "m1", 10)
			a.fire(id, at(5)) // the first run still runs
			c := a.cronOf(id)
			if len(c.Runs) != tc.runs {
				t.Fatalf("runs %v, want %d", c.Runs, tc.runs)
			}
			if tc.runs == 1 && (len(c.Skips) != 1 || !strings.HasPrefix(c.Skips[0].Reason, "overlap:")) {
				t.Errorf("skips %+v, want one overlap", c.Skips)
			}
			// Once the run has ended, the next firing runs under either
			// policy.
			a.term(first, 0, "m1", 0)
			if res := a.fire(id, at(7)); res.JobID == 0 {
				t.Errorf("firing after the run ended made no run")
			}
		})
	}
}

func TestCronKill(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 4)
	id := a.submitCron("c", "@every 2s", "", fsm.OverlapAllow)
	r1 := a.fire(id, at(3)).JobID
	r2 := a.fire(id, at(5)).JobID
	a.place(asg(r1, 0, "m1"))
	a.register(r1, 0, "m1", 10)

	res := a.mustOK(fsm.KillType, fsm.Kill{At: at(6), JobID: id, By: "alice"})
	if res.Signaled != 0 || res.Dequeued != 0 {
		t.Errorf("kill without runs: signalled %d dequeued %d, want none", res.Signaled, res.Dequeued)
	}
	if j := a.job(id); j.State() != fsm.JobKilled || !j.Cron.Ended || j.Cron.EndedBy != "alice" {
		t.Errorf("cron job after kill: %s %+v, want killed and ended by alice", j.State(), j.Cron)
	}
	if res := a.fire(id, at(7)); !res.Stale {
		t.Errorf("firing after the kill: got %+v, want stale", res)
	}
	if fire, next := fsm.CronDue(a.job(id), every2s(t), at(20), time.Second); fire != nil || !next.IsZero() {
		t.Errorf("an ended schedule is due: %+v next %v", fire, next)
	}
	res = a.mustOK(fsm.KillType, fsm.Kill{At: at(8), JobID: id, By: "alice", Runs: true})
	if res.Signaled != 1 || res.Dequeued != 1 {
		t.Errorf("kill --runs: signalled %d dequeued %d, want 1 and 1", res.Signaled, res.Dequeued)
	}
	if st := a.job(r2).State(); st != fsm.JobKilled {
		t.Errorf("queued run: %s, want killed", st)
	}
	if !a.job(r1).Instances[0].KillRequested {
		t.Errorf("running run not marked for the kill signal")
	}
	if res := a.apply(fsm.KillType, fsm.Kill{At: at(9), JobID: id, By: "alice"}); !errors.Is(res.Err, fsm.ErrJobFinished) {
		t.Errorf("second kill: got %v, want ErrJobFinished", res.Err)
	}
}

func TestCronSpecRules(t *testing.T) {
	a := newApplier(t)
	plain := a.submit("plain", 1)
	id := a.submitCron("c", "@hourly", "", "")
	for _, tc := range []struct {
		name string
		spec fsm.JobSpec
	}{
		{"catchup without cron", withCron(spec("x", 1), "", fsm.CatchupNone, "")},
		{"overlap without cron", withCron(spec("x", 1), "", "", fsm.OverlapAllow)},
		{"bad catchup", withCron(spec("x", 1), "@hourly", "all", "")},
		{"bad overlap", withCron(spec("x", 1), "@hourly", "", "queue")},
		{"cron with a dependency", withDeps(withCron(spec("x", 1), "@hourly", "", ""), []uint64{plain}, nil, nil)},
		{"dependency on a cron job", withDeps(spec("x", 1), nil, []uint64{id}, nil)},
	} {
		if res := a.apply(fsm.SubmitCronType, fsm.Submit{At: at(2), Owner: "alice", Spec: tc.spec}); !errors.Is(res.Err, fsm.ErrInvalidSpec) {
			t.Errorf("%s: got %v, want ErrInvalidSpec", tc.name, res.Err)
		}
	}
	if res := a.apply(fsm.CronFireType, fsm.CronFire{At: at(3), JobID: plain, Scheduled: at(3)}); !errors.Is(res.Err, fsm.ErrNoSuchJob) {
		t.Errorf("firing a plain job: got %v, want ErrNoSuchJob", res.Err)
	}
}

// TestCronFailoverProperty drives a cron job through leaders that come
// and go at random: each leader computes its firings from the committed
// state with its own clock (CronDue), some proposals are delivered twice
// or late (an old leader's entry committed after a new leader's), and
// replicas apply the log in batches or from a snapshot taken midway.
// Every scheduled time through the end is decided exactly once (a run or
// a skip), the times run are distinct, and every replica ends with the
// same state.
func TestCronFailoverProperty(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			sched := every2s(t)
			a := newApplier(t)
			a.join("m1", "x86_64", 64)
			catchup := []string{fsm.CatchupLast, fsm.CatchupNone}[seed%2]
			id := a.submitCron("c", "@every 2s", catchup, fsm.OverlapAllow)
			var log [][]byte
			var pending [][]byte // proposed by a leader that lost its term
			now := at(1)
			for range 300 {
				now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
				if r.IntN(10) == 0 {
					now = now.Add(time.Duration(r.IntN(9)) * time.Second) // no leader for a while
				}
				fire, _ := fsm.CronDue(a.job(id), sched, now, time.Second)
				if fire == nil {
					continue
				}
				data := encode(t, command{fsm.CronFireType, *fire})
				switch r.IntN(6) {
				case 0: // the leader dies before it commits: a later one proposes it again
					pending = append(pending, data)
					continue
				case 1: // committed twice
					log = append(log, data)
					a.raw(data)
				}
				log = append(log, data)
				a.raw(data)
				if len(pending) > 0 && r.IntN(3) == 0 { // an old leader's entry commits late
					log = append(log, pending[0])
					a.raw(pending[0])
					pending = pending[1:]
				}
			}
			c := a.cronOf(id)
			seen := map[time.Time]string{}
			for _, run := range c.Runs {
				at := a.job(run).Scheduled
				if seen[at] != "" {
					t.Fatalf("time %v decided twice: run and %s", at, seen[at])
				}
				seen[at] = "run"
			}
			if c.Skipped != len(c.Skips) || c.Missed != 0 {
				t.Fatalf("skipped %d missed %d with %d listed: the test outgrew the list", c.Skipped, c.Missed, len(c.Skips))
			}
			for _, s := range c.Skips {
				if seen[s.Scheduled] != "" {
					t.Fatalf("time %v decided twice: skip and %s", s.Scheduled, seen[s.Scheduled])
				}
				seen[s.Scheduled] = "skip"
			}
			for tm := sched.Next(at(1)); !tm.After(c.Through); tm = sched.Next(tm) {
				if seen[tm] == "" {
					t.Fatalf("time %v (through %v) never decided", tm, c.Through)
				}
				delete(seen, tm)
			}
			if len(seen) != 0 {
				t.Fatalf("times decided off the schedule: %v", seen)
			}
			if catchup == fsm.CatchupLast && len(c.Runs) == 0 {
				t.Fatalf("catchup=last never ran")
			}
			// Replicas: one in batches, one restored from a snapshot taken
			// halfway through the log.
			want := snapshotBytes(t, a.f)
			b := newApplier(t)
			b.join("m1", "x86_64", 64)
			b.submitCron("c", "@every 2s", catchup, fsm.OverlapAllow)
			half := len(log) / 2
			for _, data := range log[:half] {
				b.raw(data)
			}
			d := &applier{tb: t, f: restored(t, snapshotBytes(t, b.f)), next: b.next}
			b.batch(log[half:], false)
			for _, data := range log[half:] {
				d.raw(data)
			}
			if got := snapshotBytes(t, b.f); !bytes.Equal(got, want) {
				t.Errorf("replica applying in batches differs")
			}
			if got := snapshotBytes(t, d.f); !bytes.Equal(got, want) {
				t.Errorf("replica restored midway differs:\ngot  %s\nwant %s", jsonSnapshot(t, d.f), jsonSnapshot(t, a.f))
			}
		})
	}
}
