package queue

import "fmt"

// Active counts the placed, running and suspended instances of each queue
// during one scheduling pass and admits new ones under nq_maxactive. It
// starts from the counts at the beginning of the pass and grows with Take.
// An Active belongs to one pass and is not safe for concurrent use.
type Active struct {
	limits  map[string]Limits
	running map[string]int
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
	return &Active{limits: limits, running: r}
}

// Admit reports whether another instance of queue may start: true when the
// queue's MaxActive is 0 (no limit) or Running(queue) < MaxActive. It does
// not count the instance; call Take once it is placed.
func (a *Active) Admit(queue string) bool {
	limit := a.limits[queue].MaxActive
	return limit <= 0 || int64(a.running[queue]) < limit
}

// Take counts one more instance of queue as placed. It does not check
// Admit.
func (a *Active) Take(queue string) {
	a.running[queue]++
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
