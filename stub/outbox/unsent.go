package outbox

import (
	"cmp"
	"slices"
	"sync"

	"github.com/netmgr/netmgr/client"
)

// unsentEvents mirrors the outbox's events bucket in memory, oldest first:
// it holds an event once the transaction that recorded it is durable, and
// until the one that removed it is. It is safe for concurrent use.
type unsentEvents struct {
	mu      sync.Mutex
	entries []Entry // by sequence number
}

// add adds es; concurrent recorders may add out of sequence order.
func (u *unsentEvents) add(es ...Entry) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range es {
		i, found := slices.BinarySearchFunc(u.entries, e.Seq, func(x Entry, seq uint64) int { return cmp.Compare(x.Seq, seq) })
		if !found {
			u.entries = slices.Insert(u.entries, i, e)
		}
	}
}

// Remove drops the events seqs.
func (u *unsentEvents) remove(seqs ...uint64) {
	gone := make(map[uint64]bool, len(seqs))
	for _, s := range seqs {
		gone[s] = true
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries = slices.DeleteFunc(u.entries, func(e Entry) bool { return gone[e.Seq] })
}

// len is the number of events held.
func (u *unsentEvents) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.entries)
}

// first returns a copy of the oldest max events.
func (u *unsentEvents) first(max int) []Entry {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.entries[:min(max, len(u.entries))])
}

// answeredEvents are the sequence numbers of events a server answered
// whose removal from the outbox file is not written yet. It is safe for
// concurrent use.
type answeredEvents struct {
	mu   sync.Mutex
	seqs []uint64
}

// put adds seqs and reports whether the set was empty before, in which
// case the caller arranges for a flush.
func (a *answeredEvents) put(seqs ...uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	first := len(a.seqs) == 0
	a.seqs = append(a.seqs, seqs...)
	return first && len(seqs) > 0
}

// take empties the set and returns what it held.
func (a *answeredEvents) take() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.seqs
	a.seqs = nil
	return s
}

// has reports whether an event of attempt k is still unanswered.
func (u *unsentEvents) has(k client.AttemptRef) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range u.entries {
		if e.Ev.JobID == k.JobID && e.Ev.Instance == k.Instance && e.Ev.Attempt == k.Attempt {
			return true
		}
	}
	return false
}
