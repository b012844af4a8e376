package planner

import (
	"fmt"
	"slices"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// shares is one pass's fair-share order: each owner of waiting work
// ranked by queue.ShareRanks over the view's usage (fsm.View.ShareKey),
// decayed to the latest committed charge, so every server ranks alike.
type shares struct {
	rank map[string]int
}

// newShares ranks the owners of the jobs in items (one job per entry);
// nil when fair share is off.
func newShares(v fsm.View, owners []string) *shares {
	if !v.FairShareOn() {
		return nil
	}
	keys := make([]queue.ShareKey, len(owners))
	for i, o := range owners {
		keys[i] = v.ShareKey(o)
	}
	ranks := queue.ShareRanks(keys)
	s := &shares{rank: make(map[string]int, len(owners))}
	for i, o := range owners {
		s.rank[o] = ranks[i]
	}
	return s
}

// batch is one job's queued instances in a pass: item is the job's
// queue.Item (its Instance the first queued one), refs the queued
// instances in instance order. Every key queue.Compare orders by but the
// instance is the job's, so a job's instances are consecutive in queue
// order, and the pass orders jobs, not instances: a pass over 100,000
// waiting instances of 1,000 jobs sorts 1,000.
type batch struct {
	item queue.Item
	refs []fsm.InstanceRef
}

// at is the queue item of the batch's k-th instance.
func (b *batch) at(k int) queue.Item {
	it := b.item
	it.Instance = b.refs[k].Instance
	return it
}

// items is the batch's instances as queue items.
func (b *batch) items() []queue.Item {
	out := make([]queue.Item, len(b.refs))
	for k := range b.refs {
		out[k] = b.at(k)
	}
	return out
}

// order is the waiting work in the order the pass takes it, one batch
// per job: the interactive queue's first, then queue priority, then the
// job's own priority (set by a site policy's admit), then the owner's
// fair-share rank, then submit order (queue.Compare). This and
// newShares are the one place the order is made, so a site policy can
// replace the ranks without touching the pass.
func (p *Pass) order() []batch {
	queued := p.v.Queued() // by job, then instance
	var batches []batch
	var owners []string
	slot := map[string]int{}
	for k := 0; k < len(queued); {
		end := k + 1
		for end < len(queued) && queued[end].JobID == queued[k].JobID {
			end++
		}
		j, _, _ := p.v.Instance(queued[k])
		n, ok := slot[j.Owner]
		if !ok {
			n = len(owners)
			slot[j.Owner] = n
			owners = append(owners, j.Owner)
		}
		ql := p.limits[j.Queue]
		batches = append(batches, batch{item: queue.Item{
			JobID: j.ID, Instance: queued[k].Instance, SubmitIndex: j.CreateIndex,
			Interactive: ql.Interactive, Priority: ql.Priority, JobPriority: j.Spec.Priority,
			Share: n, // the owner's slot until ranked
		}, refs: queued[k:end]})
		k = end
	}
	if p.site != nil {
		if out, ok := p.siteOrder(batches); ok {
			p.siteOrdered = true
			return out
		}
	}
	p.share = newShares(p.v, owners)
	if p.share == nil || len(owners) < 2 {
		for i := range batches {
			batches[i].item.Share = 0
		}
		orderBatches(batches)
		return batches
	}
	ranks := make([]int, len(owners))
	for i, o := range owners {
		ranks[i] = p.share.rank[o]
	}
	for i := range batches {
		batches[i].item.Share = ranks[batches[i].item.Share]
	}
	// The batches come in job order, which is submit order: a stable
	// counting sort by rank leaves them in queue.Compare's order whenever
	// the priorities are equal, and the sort, which must still sort by
	// priority, then finds them sorted and is done in one scan.
	batches = byRank(batches, len(owners))
	orderBatches(batches)
	return batches
}

// orderBatches sorts batches by queue.Compare of their items.
func orderBatches(batches []batch) {
	slices.SortFunc(batches, func(a, b batch) int { return queue.Compare(a.item, b.item) })
}

// byRank is batches stably sorted by their items' Share, a rank below n.
func byRank(batches []batch, n int) []batch {
	start := make([]int, n+1)
	for _, b := range batches {
		start[b.item.Share+1]++
	}
	for r := 1; r <= n; r++ {
		start[r] += start[r-1]
	}
	out := make([]batch, len(batches))
	for _, b := range batches {
		out[start[b.item.Share]] = b
		start[b.item.Share]++
	}
	return out
}

// Explain makes Run say, for an instance left waiting for capacity, when
// fair share put others before it (netstatus --why). It costs a walk of
// the work ahead per job, so only the why answer asks for it.
func (p *Pass) Explain() *Pass {
	p.explain = true
	return p
}

// behindShares is the Held reason of the instances of batches[k] when
// fair share put instances submitted after them ahead of them: `behind 3
// instances of users with lower usage (your factor 0.21)`; nil when none.
func (p *Pass) behindShares(batches []batch, k int) *Held {
	if p.siteOrdered {
		return p.behindSite(batches, k)
	}
	if p.share == nil {
		return nil
	}
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
	j, _ := p.v.Job(it.JobID)
	return &Held{Reason: fmt.Sprintf("behind %d %s of users with lower usage (your factor %.2f)",
		n, plural(n, "instance", "instances"), UserFactor(p.v, j.Owner))}
}

// sameLevel reports whether a and b are equal in the keys queue.Compare
// puts before the rank: only then did a rank put one before the other.
func sameLevel(a, b queue.Item) bool {
	return a.Interactive == b.Interactive && a.Priority == b.Priority && a.JobPriority == b.JobPriority
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// AccountFactor is the fair-share factor of account, 2^(-U/S) (Slurm's):
// U its decayed usage over all accounts', S its share over all accounts'
// (the declared ones and the default). For people only: the order is
// queue.CompareShares', which is exact.
func AccountFactor(v fsm.View, account string) float64 {
	var total, shares uint64
	_, accounts := v.UsageNames()
	db, _ := v.Database()
	at, hl := v.UsageAt(), v.HalfLife()
	for _, a := range accounts {
		total += v.AccountUsage(a).ValueAt(at, hl)
	}
	hasDefault := false
	for _, a := range db.Accounts {
		shares += uint64(v.AccountShare(a.Name))
		hasDefault = hasDefault || a.Name == queue.DefaultAccount
	}
	if !hasDefault {
		shares += uint64(v.AccountShare(queue.DefaultAccount))
	}
	return queue.Factor(v.AccountUsage(account).ValueAt(at, hl), total, uint64(v.AccountShare(account)), shares)
}

// UserFactor is user's fair-share factor within its account, 2^(-U/S):
// U its decayed usage over its account's, S its share over the shares of
// the account's users (declared members, or for the default account the
// users charged to it, and user itself). For people only, as
// AccountFactor.
func UserFactor(v fsm.View, user string) float64 {
	acct := v.AccountOf(user)
	at, hl := v.UsageAt(), v.HalfLife()
	var shares uint64
	users, _ := v.UsageNames()
	counted := map[string]bool{}
	add := func(u string) {
		if !counted[u] && v.AccountOf(u) == acct {
			counted[u] = true
			shares += uint64(v.UserShare(u))
		}
	}
	db, _ := v.Database()
	for _, a := range db.Accounts {
		if a.Name == acct {
			for _, u := range a.Users {
				add(u)
			}
		}
	}
	for _, u := range users {
		add(u)
	}
	add(user)
	return queue.Factor(v.UserUsage(user).ValueAt(at, hl), v.AccountUsage(acct).ValueAt(at, hl), uint64(v.UserShare(user)), shares)
}
