package main

import "fmt"

// thawGrace is how long after its machine thaws an attempt frozen with it
// may still be seen: its supervisor checks the lease every 200 ms and then
// kills it, and the job's own beat comes once a second.
const thawGrace = 1.0

// freeze is a span of ledger time during which every process of a machine
// was frozen (docker pause): its stub, the supervisors and the jobs.
type freeze struct {
	Host     string
	From, To float64
}

// freezesOf returns the pause-stub faults injected, as freezes.
func freezesOf(inj []injected) []freeze {
	var out []freeze
	for _, in := range inj {
		if in.Err != nil || in.Fault.Kind != faultPauseStub {
			continue
		}
		for _, n := range in.Targets {
			out = append(out, freeze{Host: n.Name, From: in.From, To: in.To})
		}
	}
	return out
}

// frozenOverlap reports whether attempt a overlapped the later attempt b
// only as the README's frozen-machine race: a's machine was frozen when b
// started (its lease had run out meanwhile), and a was seen no later than
// thawGrace after the thaw, when its supervisor killed it. No lease held in
// user space can stop a job that runs on for an instant when its frozen
// machine thaws; only fencing at the resource, with the attempt number,
// does. It is reported as a note, not as doubled. It returns the freeze.
func frozenOverlap(a, b *attemptRun, fs []freeze) (freeze, bool) {
	if len(a.Starts) == 0 {
		return freeze{}, false
	}
	host := a.Starts[len(a.Starts)-1].Host
	for _, f := range fs {
		if f.Host == host && b.First >= f.From && b.First <= f.To && a.Last <= f.To+thawGrace {
			return f, true
		}
	}
	return freeze{}, false
}

// frozenNote describes a frozen-machine overlap.
func frozenNote(k instKey, a, b *attemptRun, f freeze) string {
	return fmt.Sprintf("job %d instance %d: attempt %d (%s) was frozen with its machine %.2f-%.2f while attempt %d (%s) started, and was last seen %.2fs after the thaw: the frozen-machine race the README documents, not counted as doubled",
		k.Job, k.Instance, a.Attempt, a.hosts(), f.From, f.To, b.Attempt, b.hosts(), a.Last-f.To)
}
