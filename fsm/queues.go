package fsm

import (
	"fmt"
	"slices"

	"github.com/netmgr/netmgr/queue"
)

// DefaultQueue is the queue of a job that names none. It always exists:
// with priority 0 and no limits until an administrator declares it.
const DefaultQueue = "default"

// queueLimits returns a queue's declaration with its values in force
// (prime time's inside an open window); the default queue exists even
// when undeclared.
func (d *db) queueLimits(name string) (DeclaredQueue, bool) {
	if q, ok := d.database.Queue(name); ok {
		return q.InForce(d.primeOpen(name)), true
	}
	if name == DefaultQueue {
		return DeclaredQueue{Name: DefaultQueue}, true
	}
	return DeclaredQueue{}, false
}

// Limits turns a declaration into the queue package's limits.
func (q DeclaredQueue) Limits() queue.Limits {
	return queue.Limits{
		Priority: q.Priority, MaxSize: q.MaxSize, MaxActive: q.MaxActive,
		MaxRunSeconds: q.MaxRunSeconds, MaxMemMB: q.MaxMemMB, KillGraceSeconds: q.KillGraceSeconds,
		Policy: q.Policy, MaxUserActive: q.MaxUserActive, MaxUserQueued: q.MaxUserQueued,
		Interactive: q.Interactive,
	}
}

// admit checks that the job's queue exists and can take it.
func (d *db) admit(s *JobSpec, owner string) (string, error) {
	name := s.QueueName()
	q, ok := d.queueLimits(name)
	if !ok {
		return "", fmt.Errorf("%w: queue %s", ErrNoSuchQueue, name)
	}
	held := 0
	if c, ok := d.queues[name]; ok {
		held = c.Jobs
	}
	if err := queue.CheckSubmit(name, q.Limits(), held, s.MemoryMB); err != nil {
		return "", err
	}
	if err := queue.CheckUser(name, q.Limits(), owner, d.userCounts(name, owner).Jobs); err != nil {
		return "", err
	}
	lead := s.WarnLeadSeconds
	if s.HasCheckpoint() && s.TimeLimitSeconds == 0 && q.Limits().MaxRunSeconds == 0 {
		// A job that checkpoints may name its signal with no time limit:
		// it asks it to checkpoint before a vacate (level 42 only).
		lead = 0
	}
	if err := queue.CheckTime(name, q.Limits(), s.TimeLimitSeconds, lead); err != nil {
		return "", err
	}
	return name, nil
}

func (d *db) applySetQueue(index uint64, c *SetQueue) *Result {
	q := c.Queue
	if q.Name == "" || q.MaxSize < 0 || q.MaxActive < 0 || q.MaxRunSeconds < 0 || q.MaxMemMB < 0 || q.KillGraceSeconds < 0 ||
		q.MaxUserActive < 0 || q.MaxUserQueued < 0 {
		return &Result{Index: index, Err: fmt.Errorf("%w: queue %q: a name and non-negative limits are required", ErrInvalidDatabase, q.Name)}
	}
	if !validPolicy(q.Policy) {
		return &Result{Index: index, Err: fmt.Errorf("%w: queue %q: unknown policy %q", ErrInvalidDatabase, q.Name, q.Policy)}
	}
	if other := d.database.InteractiveQueue(); q.Interactive && other != "" && other != q.Name {
		return &Result{Index: index, Err: fmt.Errorf("%w: queue %q: queue %q is already marked interactive", ErrInvalidDatabase, q.Name, other)}
	}
	if !validPreempt(q.Preempt) {
		return &Result{Index: index, Err: fmt.Errorf("%w: queue %q: unknown preempt %q", ErrInvalidDatabase, q.Name, q.Preempt)}
	}
	// Replace the declarations slice rather than edit it in place: a
	// snapshot being persisted may share it.
	qs := slices.Clone(d.database.Queues)
	i := slices.IndexFunc(qs, func(x DeclaredQueue) bool { return x.Name == q.Name })
	kind, verb := EventQueueChanged, "changed"
	if i >= 0 {
		qs[i] = q
	} else {
		qs = append(qs, q)
		kind, verb = EventQueueAdded, "added"
	}
	old := d.database
	d.database.Queues = qs
	d.primeAfterLoad(&old)
	d.event(index, c.At, kind, 0, -1, 0, "", fmt.Sprintf("%s %s queue %s: %s", actor(c.By), verb, q.Name, describeLimits(q)))
	return &Result{Index: index}
}

func (d *db) applyRemoveQueue(index uint64, c *RemoveQueue) *Result {
	if c.Name == DefaultQueue {
		return &Result{Index: index, Err: fmt.Errorf("queue %s: %w", c.Name, ErrQueueInUse)}
	}
	i := slices.IndexFunc(d.database.Queues, func(x DeclaredQueue) bool { return x.Name == c.Name })
	if i < 0 {
		return &Result{Index: index, Err: fmt.Errorf("%w: queue %s", ErrNoSuchQueue, c.Name)}
	}
	if n := d.queues[c.Name]; n != nil && n.Jobs > 0 {
		return &Result{Index: index, Err: fmt.Errorf("queue %s holds %d unfinished jobs: %w", c.Name, n.Jobs, ErrQueueInUse)}
	}
	old := d.database
	d.database.Queues = slices.Delete(slices.Clone(d.database.Queues), i, i+1)
	d.primeAfterLoad(&old)
	d.event(index, c.At, EventQueueRemoved, 0, -1, 0, "", fmt.Sprintf("%s removed queue %s", actor(c.By), c.Name))
	return &Result{Index: index}
}

// sortedQueueNames lists the queues that hold something, by name.
func sortedQueueNames(m map[string]*queueCounts) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// queuePolicyDedicated is queue.PolicyDedicated, as placement.go checks it.
const queuePolicyDedicated = queue.PolicyDedicated

// validPolicy reports whether p is a queue placement policy ("" is the
// default, backfill).
func validPolicy(p string) bool {
	switch p {
	case "", queue.PolicyBackfill, queue.PolicyGang, queue.PolicyDedicated, queue.PolicySpread:
		return true
	}
	return false
}
