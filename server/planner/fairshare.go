package planner

import (
	"fmt"

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

// order is the waiting work in the order the pass takes it: the
// interactive queue's first, then queue priority, then the job's own
// priority (set by a site policy's admit), then the owner's fair-share
// rank, then submit order
// (queue.Compare). This and newShares are the one place the order is
// made, so a site policy can replace the ranks without touching the
// pass.
func (p *Pass) order() []queue.Item {
	queued := p.v.Queued()
	items := make([]queue.Item, 0, len(queued))
	var owners []string
	slot := map[string]int{}
	var last *fsm.Job
	owner := 0
	for _, ref := range queued {
		if last == nil || last.ID != ref.JobID { // a job's instances are consecutive
			last, _, _ = p.v.Instance(ref)
			n, ok := slot[last.Owner]
			if !ok {
				n = len(owners)
				slot[last.Owner] = n
				owners = append(owners, last.Owner)
			}
			owner = n
		}
		ql := p.limits[last.Queue]
		items = append(items, queue.Item{
			JobID: ref.JobID, Instance: ref.Instance, SubmitIndex: last.CreateIndex,
			Interactive: ql.Interactive, Priority: ql.Priority, JobPriority: last.Spec.Priority,
			Share: owner, // the owner's slot until ranked
		})
	}
	if p.site != nil {
		if out, ok := p.siteOrder(items); ok {
			p.siteOrdered = true
			return out
		}
	}
	p.share = newShares(p.v, owners)
	if p.share == nil || len(owners) < 2 {
		for i := range items {
			items[i].Share = 0
		}
		queue.Order(items)
		return items
	}
	ranks := make([]int, len(owners))
	for i, o := range owners {
		ranks[i] = p.share.rank[o]
	}
	for i := range items {
		items[i].Share = ranks[items[i].Share]
	}
	// The queued refs come in job order, which is submit order: a stable
	// counting sort by rank leaves them in queue.Compare's order whenever
	// the priorities are equal, and Order, which must still sort by
	// priority, then finds them sorted and is done in one scan.
	items = byRank(items, len(owners))
	queue.Order(items)
	return items
}

// byRank is items stably sorted by Share, a rank below n.
func byRank(items []queue.Item, n int) []queue.Item {
	start := make([]int, n+1)
	for _, it := range items {
		start[it.Share+1]++
	}
	for r := 1; r <= n; r++ {
		start[r] += start[r-1]
	}
	out := make([]queue.Item, len(items))
	for _, it := range items {
		out[start[it.Share]] = it
		start[it.Share]++
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

// behindShares is the Held reason of items[k] when fair share put
// instances submitted after it ahead of it: `behind 3 instances of users
// with lower usage (your factor 0.21)`; nil when none.
func (p *Pass) behindShares(items []queue.Item, k int) *Held {
	if p.siteOrdered {
		return p.behindSite(items, k)
	}
	if p.share == nil {
		return nil
	}
	it := items[k]
	n := 0
	for _, a := range items[:k] {
		if sameLevel(a, it) && a.Share < it.Share && a.SubmitIndex > it.SubmitIndex {
			n++
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
