package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/netmgr/netmgr/queue"
)

// FairShareStart turns fair share on: from the entry that applies it, the
// end of every attempt that ran charges its owner and the owner's account
// (charge). The leader proposes it once every server applies
// FairShareStartType, so no replica applies ends without charging them;
// a repeat changes nothing (Result.Stale).
type FairShareStart struct {
	At time.Time `json:"at"`
}

// fairShare is the usage fair share orders by. Since snapshot version 13
// it is in the snapshot's header (fairShareRecord).
type fairShare struct {
	// StartIndex is the index of the FairShareStart; 0 while fair share
	// is off.
	StartIndex uint64
	users      map[string]queue.Usage
	accounts   map[string]queue.Usage
	// latest is the latest charge's time (Unix ms): the one time every
	// usage is decayed to when work is ordered, so the order needs no
	// clock.
	latest int64
}

// fairShareRecord is fairShare as the snapshot's header holds it.
type fairShareRecord struct {
	StartIndex uint64       `json:"start_index"`
	Latest     int64        `json:"latest,omitempty"`
	Users      []namedUsage `json:"users,omitempty"`
	Accounts   []namedUsage `json:"accounts,omitempty"`
}

// namedUsage is one user's or account's usage in a snapshot.
type namedUsage struct {
	Name string `json:"name"`
	queue.Usage
}

// record copies f for a snapshot, names in order; nil while fair share is
// off.
func (f *fairShare) record() *fairShareRecord {
	if f.StartIndex == 0 {
		return nil
	}
	return &fairShareRecord{StartIndex: f.StartIndex, Latest: f.latest, Users: named(f.users), Accounts: named(f.accounts)}
}

func named(m map[string]queue.Usage) []namedUsage {
	out := make([]namedUsage, 0, len(m))
	for n, u := range m {
		out = append(out, namedUsage{n, u})
	}
	slices.SortFunc(out, func(a, b namedUsage) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// restore sets f from a snapshot's record (nil: off).
func (f *fairShare) restore(r *fairShareRecord) {
	*f = fairShare{users: map[string]queue.Usage{}, accounts: map[string]queue.Usage{}}
	if r == nil {
		return
	}
	f.StartIndex, f.latest = r.StartIndex, r.Latest
	for _, u := range r.Users {
		f.users[u.Name] = u.Usage
	}
	for _, u := range r.Accounts {
		f.accounts[u.Name] = u.Usage
	}
}

func (d *db) applyFairShareStart(index uint64, c *FairShareStart) *Result {
	if d.share.StartIndex != 0 {
		return &Result{Index: index, Stale: true}
	}
	d.share.StartIndex = index
	return &Result{Index: index}
}

// slotWidth is how many slots one instance holds while it runs: one, as
// the placement counts it (Machine.Slots). A job's width is its number of
// instances, each charged on its own.
const slotWidth = 1

// charge adds the run of in's attempt that just ended to its owner's and
// the owner's account's usage, when fair share is on: slotWidth × the
// milliseconds from StartedAt to EndedAt, both committed times, charged
// at EndedAt. An attempt that never started costs nothing.
func (d *db) charge(j *Job, in *Instance) {
	if d.share.StartIndex == 0 || j == nil || in.StartedAt.IsZero() || in.EndedAt.IsZero() {
		return
	}
	ms := in.EndedAt.Sub(in.StartedAt).Milliseconds()
	if ms <= 0 {
		return
	}
	at := in.EndedAt.UnixMilli()
	hl := d.halfLife()
	amount := uint64(ms) * slotWidth
	d.share.users[j.Owner] = d.share.users[j.Owner].Charge(amount, at, hl)
	acct := d.accountOf(j.Owner)
	d.share.accounts[acct] = d.share.accounts[acct].Charge(amount, at, hl)
	d.share.latest = max(d.share.latest, at)
}

// halfLife is the database's fairshare_halflife, or the default.
func (d *db) halfLife() time.Duration {
	if d.database.HalfLifeSeconds > 0 {
		return time.Duration(d.database.HalfLifeSeconds) * time.Second
	}
	return queue.DefaultHalfLife
}

// shareIndex is derived from the database's accounts and shares (never
// snapshotted; indexAccounts rebuilds it when the database changes).
type shareIndex struct {
	accountOf    map[string]string // user -> account, for users in one
	accountShare map[string]int64  // declared accounts' shares
	userShare    map[string]int64  // declared users' shares
}

// indexAccounts rebuilds d.shares from the database.
func (d *db) indexAccounts() {
	x := shareIndex{accountOf: map[string]string{}, accountShare: map[string]int64{}, userShare: map[string]int64{}}
	for _, a := range d.database.Accounts {
		x.accountShare[a.Name] = max(a.Share, 1)
		for _, u := range a.Users {
			x.accountOf[u] = a.Name
		}
	}
	for _, s := range d.database.Shares {
		x.userShare[s.User] = max(s.Share, 1)
	}
	d.shares = x
	if d.share.users == nil {
		d.share.users, d.share.accounts = map[string]queue.Usage{}, map[string]queue.Usage{}
	}
}

// accountOf is user's account: the declared one, or queue.DefaultAccount.
func (d *db) accountOf(user string) string {
	if a, ok := d.shares.accountOf[user]; ok {
		return a
	}
	return queue.DefaultAccount
}

// checkShares re-checks the fair-share declarations: accounts named once,
// a user in at most one account and given one share, shares positive.
func (db *Database) checkShares(seen map[string]bool) error {
	member := map[string]string{}
	for _, a := range db.Accounts {
		if a.Name == "" || seen["account "+a.Name] || a.Share < 0 {
			return fmt.Errorf("%w: account %q empty, declared twice or with a negative share", ErrInvalidDatabase, a.Name)
		}
		seen["account "+a.Name] = true
		for _, u := range a.Users {
			if other, ok := member[u]; ok || u == "" {
				return fmt.Errorf("%w: user %q is in accounts %q and %q", ErrInvalidDatabase, u, other, a.Name)
			}
			member[u] = a.Name
		}
	}
	for _, s := range db.Shares {
		if s.User == "" || seen["share "+s.User] || s.Share < 1 {
			return fmt.Errorf("%w: share of %q empty, declared twice or below 1", ErrInvalidDatabase, s.User)
		}
		seen["share "+s.User] = true
	}
	if db.HalfLifeSeconds < 0 {
		return fmt.Errorf("%w: negative fairshare_halflife", ErrInvalidDatabase)
	}
	return nil
}

// UserCounts is what one user holds in one queue: unfinished jobs,
// queued instances and placed, running or suspended ones.
type UserCounts struct {
	Jobs, Waiting, Active int
}

// QueueUser names one user's share of one queue.
type QueueUser = queue.QueueUser

// addUser moves the counts of j's owner in j's queue by the deltas,
// dropping the entry when it is all zero.
func (d *db) addUser(j *Job, jobs, waiting, active int) {
	k := QueueUser{Queue: j.Queue, User: j.Owner}
	c := d.users[k]
	if c == nil {
		c = &UserCounts{}
		d.users[k] = c
	}
	c.Jobs += jobs
	c.Waiting += waiting
	c.Active += active
	if *c == (UserCounts{}) {
		delete(d.users, k)
	}
}

// userCounts is what user holds in queue now.
func (d *db) userCounts(queue, user string) UserCounts {
	if c := d.users[QueueUser{Queue: queue, User: user}]; c != nil {
		return *c
	}
	return UserCounts{}
}

// FairShareOn reports whether fair share is on (a FairShareStart is
// applied): attempt ends charge usage and work is ordered by it.
func (v View) FairShareOn() bool { return v.d.share.StartIndex != 0 }

// HalfLife is the fair-share half-life in force.
func (v View) HalfLife() time.Duration { return v.d.halfLife() }

// UsageAt is the time (Unix ms) of the latest charge, the time the usages
// ShareKey compares are decayed to.
func (v View) UsageAt() int64 { return v.d.share.latest }

// AccountOf is user's fair-share account (queue.DefaultAccount when the
// database puts the user in none).
func (v View) AccountOf(user string) string { return v.d.accountOf(user) }

// UserShare is user's share within its account: declared, or 1.
func (v View) UserShare(user string) int64 {
	if s, ok := v.d.shares.userShare[user]; ok {
		return s
	}
	return 1
}

// AccountShare is account's share: declared, or 1.
func (v View) AccountShare(account string) int64 {
	if s, ok := v.d.shares.accountShare[account]; ok {
		return s
	}
	return 1
}

// UserUsage is user's raw usage record (slot-milliseconds at a time).
func (v View) UserUsage(user string) queue.Usage { return v.d.share.users[user] }

// AccountUsage is account's raw usage record.
func (v View) AccountUsage(account string) queue.Usage { return v.d.share.accounts[account] }

// ShareKey is what orders user's waiting work by fair share: its
// account's and its own usage, decayed to UsageAt, and shares. It is a
// function of the replicated state alone.
func (v View) ShareKey(user string) queue.ShareKey {
	at, hl := v.d.share.latest, v.d.halfLife()
	acct := v.d.accountOf(user)
	return queue.ShareKey{
		AccountUsage: v.d.share.accounts[acct].ValueAt(at, hl), AccountShare: uint64(v.AccountShare(acct)),
		UserUsage: v.d.share.users[user].ValueAt(at, hl), UserShare: uint64(v.UserShare(user)),
	}
}

// UsageNames lists, in order, the users and the accounts with a usage
// record.
func (v View) UsageNames() (users, accounts []string) {
	for _, u := range named(v.d.share.users) {
		users = append(users, u.Name)
	}
	for _, a := range named(v.d.share.accounts) {
		accounts = append(accounts, a.Name)
	}
	return users, accounts
}

// QueueUserCounts is what user holds in queue now.
func (v View) QueueUserCounts(queue, user string) UserCounts { return v.d.userCounts(queue, user) }

// UserTotals is what each user holds now over every queue, by user.
func (v View) UserTotals() map[string]UserCounts {
	out := map[string]UserCounts{}
	for k, c := range v.d.users {
		t := out[k.User]
		t.Jobs += c.Jobs
		t.Waiting += c.Waiting
		t.Active += c.Active
		out[k.User] = t
	}
	return out
}
