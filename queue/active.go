package queue

import "fmt"

// Active counts the placed, running and suspended instances of each queue,
// and of each user within each queue, during one scheduling pass, and
// admits new ones under nq_maxactive and nq_maxuser_active. It starts from
// the counts at the beginning of the pass and grows with Take. An Active
// belongs to one pass and is not safe for concurrent use.
type Active struct {
	limits  map[string]Limits
	running map[string]int
	users   map[QueueUser]int
}

// QueueUser names one user's share of one queue.
type QueueUser struct {
	Queue, User string
}

// NewActive returns the counter for one pass. limits maps queue names to
// their limits; a queue missing from it has no limits. running maps queue
// names to their instances placed, running or suspended now. running is
// copied; limits is kept for the pass and never changed.
func NewActive(limits map[string]Limits, running map[string]int) *Active {
	r := make(map[string]int, len(running))
	for q, n := range running {
		r[q] = n
	}
	return &Active{limits: limits, running: r, users: map[QueueUser]int{}}
}

// SetUserRunning sets the instances user has placed, running or
// suspended in queue at the start of the pass, for nq_maxuser_active. A
// caller need set it only for queues with that limit.
func (a *Active) SetUserRunning(queue, user string, n int) {
	a.users[QueueUser{queue, user}] = n
}

// Admit reports whether another instance of queue may start: true when the
// queue's MaxActive is 0 (no limit) or Running(queue) < MaxActive. It does
// not count the instance; call Take once it is placed.
func (a *Active) Admit(queue string) bool {
	limit := a.limits[queue].MaxActive
	return limit <= 0 || int64(a.running[queue]) < limit
}

// AdmitUser is Admit, and also true only when user runs fewer of queue's
// instances than its MaxUserActive (0: no limit).
func (a *Active) AdmitUser(queue, user string) bool {
	if !a.Admit(queue) {
		return false
	}
	limit := a.limits[queue].MaxUserActive
	return limit <= 0 || int64(a.users[QueueUser{queue, user}]) < limit
}

// Take counts one more instance of queue as placed. It does not check
// Admit.
func (a *Active) Take(queue string) {
	a.running[queue]++
}

// TakeUser is Take, counting the instance against user's share too.
func (a *Active) TakeUser(queue, user string) {
	a.running[queue]++
	a.users[QueueUser{queue, user}]++
}

// UserRunning is the number of queue's instances user has placed,
// running or suspended, including those taken in this pass.
func (a *Active) UserRunning(queue, user string) int {
	return a.users[QueueUser{queue, user}]
}

// Running is the number of queue's instances placed, running or suspended,
// including those taken in this pass.
func (a *Active) Running(queue string) int {
	return a.running[queue]
}

// Reason says why Admit refuses queue, for netstatus --why, e.g.
// `queue NEW_Q already runs 5 instances (nq_maxactive=5)`; it is "" when
// Admit would admit.
func (a *Active) Reason(queue string) string {
	if a.Admit(queue) {
		return ""
	}
	n := a.running[queue]
	return fmt.Sprintf("queue %s already runs %d %s (nq_maxactive=%d)",
		queue, n, plural(n, "instance", "instances"), a.limits[queue].MaxActive)
}

// ReasonUser says why AdmitUser refuses, e.g. `user alice already runs 2
// instances in queue NEW_Q (nq_maxuser_active=2)`; Reason's sentence when
// the queue's own limit refuses; "" when AdmitUser would admit.
func (a *Active) ReasonUser(queue, user string) string {
	if r := a.Reason(queue); r != "" || a.AdmitUser(queue, user) {
		return r
	}
	n := a.users[QueueUser{queue, user}]
	return fmt.Sprintf("user %s already runs %d %s in queue %s (nq_maxuser_active=%d)",
		user, n, plural(n, "instance", "instances"), queue, a.limits[queue].MaxUserActive)
}
