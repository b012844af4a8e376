package planner

import (
	"fmt"
	"slices"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/policy"
)

// site is the site policy a pass orders by (Pass.Site).
type site struct {
	prog   *policy.Program
	failed func(error)
}

// Site makes the pass order waiting work within a queue priority by the
// script's priority function (package server/policy) in place of fair
// share, when prog defines one. A call that fails is given to failed
// (on the pass's goroutine, inside its fsm.Read: it must not block or
// propose) and the whole pass takes the built-in order. Every value the
// script sees comes from the view: the order is the same on any server
// that orders the same state.
func (p *Pass) Site(prog *policy.Program, failed func(error)) *Pass {
	if prog.HasPriority() {
		p.site = &site{prog: prog, failed: failed}
	}
	return p
}

// SiteNow is the time a script sees as now (Unix seconds): the latest
// committed time the state holds, the newest usage charge or the
// policy's load, never a clock.
func SiteNow(v fsm.View) int64 {
	now := v.UsageAt() / 1000
	if pol := v.Policy(); pol != nil {
		now = max(now, pol.LoadedAt.Unix())
	}
	return now
}

// SitePool is what is free in the pool by the replicated state alone
// (machines usable and awake; gossip's liveness is the leader's own and
// left out), and how much work runs and waits.
func SitePool(v fsm.View) policy.Pool {
	var p policy.Pool
	for _, m := range v.Machines() {
		p.Running += v.Running(m.Name)
		if !m.Usable() || m.Asleep != "" {
			continue
		}
		e := m.Effective()
		cpus, gpus, _, _ := v.MachineUsage(m.Name)
		p.FreeSlots += max(m.Slots()-v.Running(m.Name), 0)
		p.FreeCPUs += max(m.Slots()-cpus, 0)
		for _, g := range e.GPUs {
			if gpus&(1<<uint(g.Index)) == 0 {
				p.FreeGPUs++
			}
		}
		p.FreeMemoryMB += max(e.MemoryMB-v.UsedMemoryMB(m.Name), 0)
	}
	p.Waiting = v.QueuedCount()
	return p
}

// SiteJob is what a script sees of a job of owner in queue with spec,
// submitted at, with waiting of its instances waiting.
func SiteJob(id uint64, owner, queueName string, spec *fsm.JobSpec, at time.Time, waiting int, free policy.Pool) policy.Job {
	return policy.Job{
		ID: id, Name: spec.Name, Owner: owner, Queue: queueName,
		Instances: spec.Min, Waiting: waiting, CPUs: spec.CPUsPerInstance(), GPUs: spec.GPUs,
		MemoryMB: spec.MemoryMB, Licenses: spec.Licenses, TimeLimitSeconds: spec.TimeLimitSeconds,
		Gang: spec.Gang, SubmittedUnix: at.Unix(), Free: free,
	}
}

// SiteUser is what a script sees of user, with its counts over every
// queue from totals (fsm.View.UserTotals).
func SiteUser(v fsm.View, user string, totals map[string]fsm.UserCounts) policy.User {
	acct := v.AccountOf(user)
	c := totals[user]
	return policy.User{Name: user, Account: acct, Share: v.UserShare(user), AccountShare: v.AccountShare(acct),
		Running: c.Active, Waiting: c.Waiting}
}

// SiteUsage is user's and its account's decayed usage in slot-seconds,
// decayed to the latest charge as fair share's order is.
func SiteUsage(v fsm.View, user string) policy.Usage {
	if !v.FairShareOn() {
		return policy.Usage{}
	}
	at, hl := v.UsageAt(), v.HalfLife()
	return policy.Usage{
		User:    float64(v.UserUsage(user).ValueAt(at, hl)) / 1000,
		Account: float64(v.AccountUsage(v.AccountOf(user)).ValueAt(at, hl)) / 1000,
	}
}

// siteOwner is what a script sees of one owner, made once per pass.
type siteOwner struct {
	user  policy.User
	usage policy.Usage
}

// siteOrder ranks batches (one per job) by the script's priority,
// highest first, one call per job, and sorts them by queue priority, job
// priority, that rank, then submit order. It reports false, with batches
// untouched, when a call fails.
func (p *Pass) siteOrder(batches []batch) ([]batch, bool) {
	free := SitePool(p.v)
	r := p.site.prog.Ranker(SiteNow(p.v), free)
	totals := p.v.UserTotals()
	users := map[string]siteOwner{}
	prios := make([]float64, len(batches))
	for k := range batches {
		j, _ := p.v.Job(batches[k].item.JobID)
		u, ok := users[j.Owner]
		if !ok {
			u = siteOwner{SiteUser(p.v, j.Owner, totals), SiteUsage(p.v, j.Owner)}
			users[j.Owner] = u
		}
		f, err := r.Priority(SiteJob(j.ID, j.Owner, j.Queue, &j.Spec, j.SubmittedAt, len(batches[k].refs), free), u.user, u.usage)
		if err != nil {
			if p.site.failed != nil {
				p.site.failed(err)
			}
			return batches, false
		}
		prios[k] = f
	}
	distinct := slices.Clone(prios)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	for k := range batches {
		n, _ := slices.BinarySearch(distinct, prios[k])
		batches[k].item.Share = len(distinct) - 1 - n // the highest number ranks 0
	}
	batches = byRank(batches, len(distinct))
	orderBatches(batches)
	return batches, true
}

// behindSite is the Held reason of the instances of batches[k] when the
// site policy put instances submitted after them ahead of them: `behind 3
// instances the site policy ranks higher`; nil when none.
func (p *Pass) behindSite(batches []batch, k int) *Held {
	it := batches[k].item
	n := 0
	for _, a := range batches[:k] {
		if sameLevel(a.item, it) && a.item.Share < it.Share && a.item.SubmitIndex > it.SubmitIndex {
			n += len(a.refs)
		}
	}
	if n == 0 {
		return nil
	}
	return &Held{Reason: fmt.Sprintf("behind %d %s the site policy ranks higher", n, plural(n, "instance", "instances"))}
}
