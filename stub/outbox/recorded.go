package outbox

import (
	"sync"
	"time"
)

// recordTimes remembers when this process recorded each event, by
// sequence number, until a server answers it (TakeRecordedAt), for the
// stub's delivery-latency metric. Safe for concurrent use.
type recordTimes struct {
	mu sync.Mutex // guards at
	at map[uint64]time.Time
}

// put stamps seq as recorded now. It is called inside the write
// transaction, which may run again: a later put of the same seq wins.
func (r *recordTimes) put(seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = make(map[uint64]time.Time)
	}
	r.at[seq] = time.Now()
}

// take returns and forgets when seq was recorded.
func (r *recordTimes) take(seq uint64) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[seq]
	delete(r.at, seq)
	return at, ok
}

// TakeRecordedAt returns, and forgets, when this process recorded the
// event seq; false for an event recorded by an earlier process or taken
// already.
func (o *Outbox) TakeRecordedAt(seq uint64) (time.Time, bool) { return o.recorded.take(seq) }
