package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// Stop causes: what was going on when an attempt of a restartable job was
// stopped. Only causeControlPlane is work lost.
const (
	causeControlPlane = "control plane" // a whole-control-plane fault in force, or healed up to stopAftermath before with nothing else in force
	causeOwnMachine   = "own machine"   // a fault of the attempt's own machine: stopping it is the rule
	causeOtherFault   = "other fault"   // a minority server fault, or another machine's fault
	causeNoFault      = "no fault"      // nothing in force
)

// Attribution windows, in seconds of the ledger clock.
const (
	// stopLag is how long after its last ledger record an attempt may
	// have been stopped: it beats once a second, and a loaded machine's
	// sleep runs late.
	stopLag = 1.5
	// healLag is how long after a fault is healed a stop still counts as
	// its doing: a thawed machine's supervisor kills within 200 ms and
	// the attempt may beat once more before.
	healLag = 2.0
	// stopAftermath is how long after a whole-control-plane fault is
	// healed a stop with no other fault in force is still charged to it:
	// the group has to elect, and the pool to form again, before the
	// stubs' leases hold.
	stopAftermath = 30.0
)

// stop is an attempt of a restartable instance that did not run to its
// end (the ledger has its start but no end) and that the servers replaced
// by a later attempt.
type stop struct {
	Job      uint64
	Instance int
	Attempt  uint64
	Host     string
	Last     float64   // last ledger record: alive until then
	Cause    string    // one of the cause constants
	Fault    *injected // the fault it is charged to (into the slice findStops got); nil for causeNoFault
	After    bool      // the fault had been healed (within stopAftermath)
	Reason   string    // how the database recorded its end, when its event was kept
}

// attemptID names one attempt of one instance.
type attemptID struct {
	Job      uint64
	Instance int
	Attempt  uint64
}

// String is the stop as the report prints it, times relative to start.
func (s stop) String(start float64) string {
	out := fmt.Sprintf("job %d instance %d attempt %d on %s, last seen +%.1fs", s.Job, s.Instance, s.Attempt, s.Host, s.Last-start)
	if s.Fault != nil {
		when := "during"
		if s.After {
			when = "after"
		}
		out += fmt.Sprintf(", %s %s", when, describeFault(*s.Fault, start))
	}
	if s.Reason != "" {
		out += ": " + s.Reason
	}
	return out
}

// describeFault is an injected fault with its targets and window.
func describeFault(in injected, start float64) string {
	return fmt.Sprintf("%s %s (+%.1fs..+%.1fs)", in.Fault.Kind, names(in.Targets), in.From-start, in.To-start)
}

// findStops lists the stopped attempts of restartable instances, in job,
// instance and attempt order, each charged to a fault by attributeStop.
// An attempt counts as stopped when the ledger has its start and no end
// and the database's attempt of the instance is a later one: the servers
// replaced it (its stub stopped it when its lease ran out, or the leader
// declared it lost) and it did not finish on its own. reasons (from the
// events, may be partial) says how the database recorded each end.
func findStops(recs []record, jobs map[uint64]client.Job, inj []injected, reasons map[attemptID]string) []stop {
	runs := runsOf(recs)
	keys := slices.SortedFunc(maps.Keys(runs), func(a, b instKey) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Instance, b.Instance))
	})
	var out []stop
	for _, k := range keys {
		job, ok := jobs[k.Job]
		if !ok || !restartable(job.Spec) || k.Instance >= len(job.Instances) {
			continue
		}
		current := job.Instances[k.Instance].Attempt
		rs := slices.Clone(runs[k])
		slices.SortFunc(rs, func(a, b *attemptRun) int { return cmp.Compare(a.Attempt, b.Attempt) })
		for _, r := range rs {
			if r.End != nil || len(r.Starts) == 0 || r.Attempt >= current {
				continue
			}
			s := stop{Job: k.Job, Instance: k.Instance, Attempt: r.Attempt, Host: r.Starts[len(r.Starts)-1].Host, Last: r.Last}
			s.Cause, s.Fault, s.After = attributeStop(s.Host, s.Last, inj)
			s.Reason = reasons[attemptID{k.Job, k.Instance, r.Attempt}]
			out = append(out, s)
		}
	}
	return out
}

// attributeStop charges a stop of an attempt on host, last seen at last,
// to the faults of the timeline. A fault is in force at the stop when its
// window, [From, To+healLag], meets [last, last+stopLag]. In order:
//
//   - a fault of the attempt's own machine in force: causeOwnMachine (a
//     machine cut off, frozen or killed must have its restartable work
//     stopped, so that it can run elsewhere);
//   - a whole-control-plane fault in force: causeControlPlane, work lost;
//   - any other fault in force: causeOtherFault;
//   - with no fault in force, a whole-control-plane fault healed at most
//     stopAftermath before last: causeControlPlane, work lost (the stop
//     came while the group or the pool was still coming back);
//   - else causeNoFault.
//
// Among several candidates of one kind the one that began last wins.
func attributeStop(host string, last float64, inj []injected) (cause string, f *injected, after bool) {
	var own, cp, aftermath, other *injected
	later := func(cur *injected, in *injected) *injected {
		if cur == nil || in.From > cur.From {
			return in
		}
		return cur
	}
	for i := range inj {
		in := &inj[i]
		if in.Err != nil {
			continue
		}
		inForce := in.From <= last+stopLag && last <= in.To+healLag
		isCP := slices.Contains(controlPlaneFaults, in.Fault.Kind)
		switch {
		case inForce && slices.Contains(stubFaults, in.Fault.Kind) && slices.ContainsFunc(in.Targets, func(n node) bool { return n.Name == host }):
			own = later(own, in)
		case inForce && isCP:
			cp = later(cp, in)
		case isCP && last > in.To && last <= in.To+stopAftermath:
			aftermath = later(aftermath, in)
		case inForce:
			other = later(other, in)
		}
	}
	switch {
	case own != nil:
		return causeOwnMachine, own, false
	case cp != nil:
		return causeControlPlane, cp, false
	case other != nil:
		return causeOtherFault, other, false
	case aftermath != nil:
		return causeControlPlane, aftermath, true
	}
	return causeNoFault, nil, false
}

// stopReasons reads from the events how the database recorded the end of
// each attempt: the first instance-killed, -lost, -failed or -ended event
// of the attempt, as "KIND: DETAIL".
func stopReasons(evs []client.Event) map[attemptID]string {
	out := map[attemptID]string{}
	for _, e := range evs {
		switch e.Kind {
		case fsm.EventInstanceKilled, fsm.EventInstanceLost, fsm.EventInstanceFailed, fsm.EventInstanceEnded:
		default:
			continue
		}
		id := attemptID{e.Job, e.Instance, e.Attempt}
		if _, ok := out[id]; !ok {
			out[id] = e.Kind + ": " + e.Detail
		}
	}
	return out
}

// workLost counts the stops charged to whole-control-plane faults.
func workLost(stops []stop) int {
	n := 0
	for _, s := range stops {
		if s.Cause == causeControlPlane {
			n++
		}
	}
	return n
}

// checkWorkLost returns a violation when more attempts were stopped by
// whole-control-plane faults than limit allows; a negative limit allows
// any number.
func checkWorkLost(stops []stop, limit int) []violation {
	n := workLost(stops)
	if limit < 0 || n <= limit {
		return nil
	}
	return []violation{{Kind: vWorkLost, Instance: -1,
		Detail: fmt.Sprintf("%d attempts of restartable jobs were stopped by whole-control-plane faults, more than -max-work-lost %d allows", n, limit)}}
}
