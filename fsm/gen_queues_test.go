package fsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// The generator's queues, owners and machines for the commands of batch
// queues, reservations and job control (see generator.next).
var (
	// genQueues are the queues jobs name: "" and "default" are the
	// default queue, "nosuch" is never declared, "q" and "qa" are also
	// declared by genDatabases.
	genQueues = []string{"", fsm.DefaultQueue, "q", "qa", "qb", "qb", "nosuch"}
	// genQueueNames are the queues SetQueue and RemoveQueue name (SetQueue
	// all but the last).
	genQueueNames = []string{fsm.DefaultQueue, "q", "qa", "qb", "qb", "nosuch"}
	// genOwners submit jobs and reserve machines.
	genOwners = []string{"gen", "ann", "bob"}
)

// queueCommand builds a SetQueue, RemoveQueue, Reserve, Unreserve,
// Suspend, Resume or RestartJob: mostly plausible, sometimes invalid.
func (g *generator) queueCommand(now time.Time) []byte {
	switch p := g.r.IntN(20); {
	case p < 4:
		q := fsm.DeclaredQueue{
			Name:      genQueueNames[g.r.IntN(len(genQueueNames)-1)], // never "nosuch"
			Priority:  g.r.IntN(3),
			MaxSize:   int64(g.r.IntN(5)),
			MaxActive: int64(g.r.IntN(4)),
			MaxMemMB:  []int64{0, 0, 500, 1000}[g.r.IntN(4)],
		}
		switch g.r.IntN(12) {
		case 0:
			q.Name = ""
		case 1:
			q.MaxActive = -1
		case 2, 3, 4:
			// Lower the busiest queue's limit under its running work.
			g.a.f.Read(func(v fsm.View) {
				for _, cur := range v.Queues() {
					if cur.Active > 1 && int64(cur.Active) > q.MaxActive {
						q.Name, q.MaxActive = cur.Name, int64(cur.Active-1)
					}
				}
			})
		}
		return g.cmd(fsm.SetQueueType, fsm.SetQueue{At: now, By: "gen", Queue: q})
	case p < 5:
		return g.cmd(fsm.RemoveQueueType, fsm.RemoveQueue{At: now, By: "gen", Name: genQueueNames[g.r.IntN(len(genQueueNames))]})
	case p < 9:
		return g.reserve(now)
	case p < 11:
		var next int
		g.a.f.Read(func(v fsm.View) {
			if rs := v.Reservations(); len(rs) > 0 {
				next = int(rs[len(rs)-1].ID)
			}
		})
		ids := make([]uint64, 1+g.r.IntN(2))
		for i := range ids {
			ids[i] = uint64(g.r.IntN(next + 2))
		}
		return g.cmd(fsm.UnreserveType, fsm.Unreserve{At: now, By: "gen", IDs: ids})
	}
	typ := []fsm.MessageType{fsm.SuspendType, fsm.ResumeType, fsm.RestartJobType}[g.r.IntN(3)]
	return g.cmd(typ, fsm.JobControl{At: now, JobID: g.controlTarget(typ), By: "gen"})
}

// tokenCommand builds a TokenIssue, a TokenRevoke, a ServerRemoved or a
// SessionEvent from g.tok: IDs and hashes from small sets, so that some
// issues clash and some revokes find nothing; some lifetimes are empty.
func (g *generator) tokenCommand(now time.Time) []byte {
	id := fmt.Sprintf("%08x", g.tok.IntN(6))
	switch p := g.tok.IntN(10); {
	case p < 6:
		return g.cmd(fsm.TokenIssueType, fsm.TokenIssue{
			ID: id, User: genOwners[g.tok.IntN(len(genOwners))], Hash: hashOf(fmt.Sprint("token ", g.tok.IntN(8))),
			IssuedAt: now, ExpiresAt: now.Add(time.Duration(g.tok.IntN(4)) * time.Minute), IssuedBy: "gen",
		})
	case p < 9:
		return g.cmd(fsm.TokenRevokeType, fsm.TokenRevoke{At: now, ID: id, By: "gen"})
	case id[7]%2 == 1: // no further draw, so the rest of the log is as before
		kind := []string{fsm.SessionOpened, fsm.SessionAttached, fsm.SessionClosed}[int(id[7]-'0')/2]
		return g.cmd(fsm.SessionEventType|fsm.IgnoreUnknownFlag, fsm.SessionEvent{At: now, Kind: kind, By: "gen", JobID: 1, Machine: "m1"})
	}
	return g.cmd(fsm.ServerRemovedType|fsm.IgnoreUnknownFlag, fsm.ServerRemoved{At: now, Name: "s2", By: "gen"})
}

// reserve sets one or two machines aside for a random owner over a window
// around now: mostly bounded, sometimes open-ended, sometimes invalid.
func (g *generator) reserve(now time.Time) []byte {
	names := append(machineNames(), "ghost")
	c := fsm.Reserve{At: now, Owner: genOwners[g.r.IntN(len(genOwners))]}
	for range 1 + g.r.IntN(2) {
		c.Machines = append(c.Machines, names[g.r.IntN(len(names)-1+g.r.IntN(2))])
	}
	c.From = now.Add(time.Duration(g.r.IntN(41)-20) * time.Second)
	switch g.r.IntN(10) {
	case 0, 1:
		// open-ended
	case 2:
		c.Until = c.From // invalid
	default:
		c.Until = c.From.Add(time.Duration(1+g.r.IntN(40)) * time.Second)
	}
	if g.r.IntN(20) == 0 {
		c.Owner = "" // invalid
	}
	return g.cmd(fsm.ReserveType, c)
}

// controlTarget mostly names a job that has an instance the command can
// change, sometimes any job or none.
func (g *generator) controlTarget(typ fsm.MessageType) uint64 {
	var fit []uint64
	var n int
	g.a.f.Read(func(v fsm.View) {
		jobs := v.Jobs()
		n = len(jobs)
		for _, j := range jobs {
			if j.KillRequested {
				continue
			}
			for _, in := range j.Instances {
				if (typ == fsm.SuspendType && in.State == fsm.InstanceRunning) ||
					(typ == fsm.ResumeType && in.State == fsm.InstanceSuspended) ||
					(typ == fsm.RestartJobType && (in.Active() || in.Finished())) {
					fit = append(fit, j.ID)
					break
				}
			}
		}
	})
	if len(fit) > 0 && g.r.IntN(4) != 0 {
		return fit[g.r.IntN(len(fit))]
	}
	return uint64(g.r.IntN(n + 2))
}

// placeTime decodes a Place entry's time.
func placeTime(tb testing.TB, data []byte) time.Time {
	tb.Helper()
	var p fsm.Place
	if err := json.Unmarshal(data[1:], &p); err != nil {
		tb.Fatalf("decode Place: %v", err)
	}
	return p.At
}

// checkQueuesAndReservations verifies the per-queue counters against a
// recount from the job records, and the reservations against their rules:
// listed by id, each with an owner, sorted machines and a window that ends
// after it starts, and no two owners' windows on one machine overlapping.
func checkQueuesAndReservations(tb testing.TB, f *fsm.FSM, step int) {
	tb.Helper()
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	f.Read(func(v fsm.View) {
		recount := map[string]*qc{}
		for _, j := range v.Jobs() {
			c := recount[j.Queue]
			if c == nil {
				c = &qc{}
				recount[j.Queue] = c
			}
			if j.Queue == "" {
				fail("job %d has no queue", j.ID)
			}
			unfinished := false
			for _, in := range j.Instances {
				switch {
				case in.State == fsm.InstanceQueued:
					c.waiting++
				case in.Active():
					c.active++
				}
				unfinished = unfinished || !in.Finished()
				if in.State == fsm.InstanceSuspended && in.SuspendIndex == 0 {
					fail("job %d instance %d suspended without a SuspendIndex", j.ID, in.Index)
				}
			}
			if unfinished {
				c.jobs++
			}
		}
		listed := map[string]bool{}
		for _, q := range v.Queues() {
			if listed[q.Name] {
				fail("queue %s listed twice", q.Name)
			}
			listed[q.Name] = true
			want := qc{}
			if c := recount[q.Name]; c != nil {
				want = *c
			}
			if got := (qc{q.Jobs, q.Waiting, q.Active}); got != want {
				fail("queue %s: counters %+v, recount %+v", q.Name, got, want)
			}
			if one, ok := v.Queue(q.Name); !ok || !reflect.DeepEqual(one, q) {
				fail("queue %s: Queue gives %+v (found %v), Queues %+v", q.Name, one, ok, q)
			}
		}
		if !listed[fsm.DefaultQueue] {
			fail("the default queue is not listed")
		}
		rs := v.Reservations()
		for i, r := range rs {
			if i > 0 && rs[i-1].ID >= r.ID {
				fail("reservations out of order: %d then %d", rs[i-1].ID, r.ID)
			}
			if r.Owner == "" || len(r.Machines) == 0 || !slices.IsSorted(r.Machines) || (!r.Until.IsZero() && !r.Until.After(r.From)) {
				fail("reservation %+v breaks its rules", *r)
			}
			for _, o := range rs[:i] {
				if o.Owner == r.Owner {
					continue
				}
				for _, m := range r.Machines {
					if slices.Contains(o.Machines, m) && windowsOverlap(o, r) {
						fail("reservations %d (%s) and %d (%s) overlap on %s", o.ID, o.Owner, r.ID, r.Owner, m)
					}
				}
			}
		}
	})
	for _, e := range errs {
		tb.Errorf("step %d: %s", step, e)
	}
	if len(errs) > 0 {
		tb.FailNow()
	}
}

// windowsOverlap reports whether two reservations share an instant.
func windowsOverlap(a, b *fsm.Reservation) bool {
	endsBy := func(end, start time.Time) bool { return !end.IsZero() && !end.After(start) }
	return !endsBy(a.Until, b.From) && !endsBy(b.Until, a.From)
}

// checkPlacedLimits verifies that a Place (stamped when) kept its queue
// limits and the reservations: after it, each accepted assignment's queue
// has no more active instances than its nq_maxactive, and no accepted
// assignment is another user's on a machine reserved at when.
func checkPlacedLimits(tb testing.TB, f *fsm.FSM, res *fsm.Result, when time.Time, step int) {
	tb.Helper()
	var errs []string
	f.Read(func(v fsm.View) {
		for _, a := range res.Accepted {
			j, ok := v.Job(a.JobID)
			if !ok {
				errs = append(errs, fmt.Sprintf("accepted %+v names no job", a))
				continue
			}
			if q, ok := v.Queue(j.Queue); ok && q.MaxActive > 0 && int64(q.Active) > q.MaxActive {
				errs = append(errs, fmt.Sprintf("accepted %+v: queue %s holds %d active, nq_maxactive %d", a, q.Name, q.Active, q.MaxActive))
			}
			if owner, ok := v.ReservedBy(a.Machine, when); ok && owner != j.Owner {
				errs = append(errs, fmt.Sprintf("accepted %+v of %s at %v: %s is reserved by %s", a, j.Owner, when.Sub(t0), a.Machine, owner))
			}
		}
	})
	for _, e := range errs {
		tb.Errorf("step %d: %s", step, e)
	}
	if len(errs) > 0 {
		tb.FailNow()
	}
}

// checkRoundTrip verifies that the state snapshots, restores and
// snapshots again byte for byte, with the same queues.
func checkRoundTrip(tb testing.TB, f *fsm.FSM, step int) {
	tb.Helper()
	data := snapshotBytes(tb, f)
	b := restored(tb, data)
	if again := snapshotBytes(tb, b); !bytes.Equal(again, data) {
		tb.Fatalf("step %d: snapshot does not round-trip:\ngot:  %s\nwant: %s", step, again, data)
	}
	var want, got []fsm.QueueView
	f.Read(func(v fsm.View) { want = v.Queues() })
	b.Read(func(v fsm.View) { got = v.Queues() })
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("step %d: queues after restore:\ngot  %+v\nwant %+v", step, got, want)
	}
}

// queueOutcomes are what TestGeneratedLogCoverage requires of the commands
// of batch queues, reservations and job control.
var queueOutcomes = []string{
	"SetQueue", "SetQueue error", "RemoveQueue", "RemoveQueue error", "RemoveQueue in use",
	"Reserve", "Reserve error", "Reserve taken", "Unreserve ended",
	"Suspend affected", "Resume affected", "RestartJob affected", "control of a killed job",
	"Submit queue full", "Submit memory over limit", "Submit no such queue",
	fsm.InstanceSuspended, "restart requested", "killed for a limit", "queue at nq_maxactive", "queue over nq_maxactive",
	"reservation in force",
}

// countQueueOutcomes counts a command's outcome for queueOutcomes.
func countQueueOutcomes(seen map[string]int, typ fsm.MessageType, res *fsm.Result) {
	switch {
	case errors.Is(res.Err, fsm.ErrQueueInUse):
		seen[typ.String()+" in use"]++
	case errors.Is(res.Err, fsm.ErrReserved):
		seen[typ.String()+" taken"]++
	case errors.Is(res.Err, queue.ErrQueueFull):
		seen[typ.String()+" queue full"]++
	case errors.Is(res.Err, queue.ErrMemoryOverLimit):
		seen[typ.String()+" memory over limit"]++
	case errors.Is(res.Err, fsm.ErrNoSuchQueue):
		seen[typ.String()+" no such queue"]++
	case errors.Is(res.Err, fsm.ErrJobFinished) && typ != fsm.KillType:
		seen["control of a killed job"]++
	case len(res.Ended) > 0:
		seen[typ.String()+" ended"]++
	case res.Affected > 0:
		seen[typ.String()+" affected"]++
	}
}

// countQueueStates counts the states for queueOutcomes in a view.
func countQueueStates(seen map[string]int, v fsm.View) {
	for _, j := range v.Jobs() {
		for _, in := range j.Instances {
			if in.RestartRequested && in.Active() {
				seen["restart requested"]++
			}
			if in.Reason != "" {
				seen["killed for a limit"]++
			}
		}
	}
	for _, q := range v.Queues() {
		switch {
		case q.MaxActive > 0 && int64(q.Active) == q.MaxActive:
			seen["queue at nq_maxactive"]++
		case q.MaxActive > 0 && int64(q.Active) > q.MaxActive:
			seen["queue over nq_maxactive"]++
		}
	}
	for _, m := range v.Machines() {
		if _, ok := v.ReservedBy(m.Name, at(int(v.Index()))); ok {
			seen["reservation in force"]++
		}
	}
}
