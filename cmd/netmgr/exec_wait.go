package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// progressAfter is how long netexec --wait started waits quietly before it
// says what the instances wait for.
const progressAfter = time.Second

// pollEvery bounds one long-poll of --wait started: how often, at most, it
// looks at the job again when nothing starts.
const pollEvery = time.Second

// startWaiter is what waitStarted needs of a client.
type startWaiter interface {
	PollJob(ctx context.Context, ref, until string, timeout time.Duration) (client.Job, error)
	Why(ctx context.Context, ref string) ([]client.WhyInstance, error)
}

var _ startWaiter = (*client.Client)(nil)

// waitStarted waits until every instance of job ref has started (or ended
// without starting) and prints, on out, one line per instance as it
// starts, saying how it started ("instance 0: running on stub1 pid 42")
// even when it has ended by the time it is seen. After progressAfter it
// prints, on progress, one line each time what the waiting instances wait
// for changes, in netstatus --why's words. It returns the job as last
// seen.
func waitStarted(ctx context.Context, c startWaiter, ref string, out, progress io.Writer) (client.Job, error) {
	begun := time.Now()
	reported := make(map[int]bool)
	lastWait := ""
	for {
		job, err := c.PollJob(ctx, ref, client.WaitStarted, pollEvery)
		if err != nil {
			return job, err
		}
		ins := append([]client.Instance(nil), job.Instances...)
		sort.Slice(ins, func(i, j int) bool { return ins[i].Index < ins[j].Index })
		for _, in := range ins {
			if !reported[in.Index] && client.InstanceReached(in.State, client.WaitStarted) {
				reported[in.Index] = true
				fmt.Fprintf(out, "instance %d: %s\n", in.Index, printable(describeStart(in)))
			}
		}
		if len(reported) >= len(job.Instances) {
			return job, nil
		}
		if time.Since(begun) < progressAfter {
			continue
		}
		why, err := c.Why(ctx, ref)
		if err != nil {
			why = nil // the job's own states still say something
		}
		if line := waitingLine(ins, reported, why); line != lastWait {
			lastWait = line
			fmt.Fprintf(progress, "waiting: %s\n", printable(line))
		}
	}
}

// describeStart says how an instance started: where it ran and its pid,
// whatever it has done since; for one that ended without running (it
// failed to start, was killed or cancelled while it waited), how it
// ended.
func describeStart(in client.Instance) string {
	if in.PID > 0 {
		return fmt.Sprintf("running on %s pid %d", orDash(in.Machine), in.PID)
	}
	desc := describeInstance(in)
	if in.Reason != "" && in.Finished() {
		desc += " (" + in.Reason + ")"
	}
	return desc
}

// waitingLine says what the instances not yet reported wait for, grouping
// the instances by reason: "instances 1,2 queued: all 2 matching machines
// are busy: 2 machines have no free slot; instance 3 placed on stub2".
func waitingLine(ins []client.Instance, reported map[int]bool, why []client.WhyInstance) string {
	reasons := make(map[int]string, len(why))
	for _, w := range why {
		reasons[w.Instance] = whyReason(w)
	}
	type group struct {
		what      string
		instances []string
	}
	var groups []*group
	byWhat := make(map[string]*group)
	for _, in := range ins {
		if reported[in.Index] {
			continue
		}
		what := in.State
		switch {
		case in.State == client.InstancePlaced:
			what = "placed on " + orDash(in.Machine) + ", starting"
		case strings.HasPrefix(reasons[in.Index], in.State):
			what = reasons[in.Index] // "held(dependency): waits for job 12 (running)"
		case reasons[in.Index] != "":
			what += ": " + reasons[in.Index]
		}
		g := byWhat[what]
		if g == nil {
			g = &group{what: what}
			byWhat[what] = g
			groups = append(groups, g)
		}
		g.instances = append(g.instances, strconv.Itoa(in.Index))
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		noun := "instance "
		if len(g.instances) > 1 {
			noun = "instances "
		}
		parts[i] = noun + strings.Join(g.instances, ",") + " " + g.what
	}
	return strings.Join(parts, "; ")
}
