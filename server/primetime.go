package server

import (
	"fmt"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/prime"
)

// Prime time's server side: the declaration between the language and the
// log, the level gate of a load, and the queue's wire form. The duty that
// switches windows is server/prime's.

// primeToLog converts an add_q's prime={...} to the log's form.
func primeToLog(p *dblang.Prime) *fsm.DeclaredPrime {
	if p == nil {
		return nil
	}
	return &fsm.DeclaredPrime{
		Windows: clone(p.Windows), TZ: p.TZ, Priority: copyPtr(p.Priority),
		MaxSize: copyPtr(p.MaxSize), MaxActive: copyPtr(p.MaxActive), MaxRunSeconds: copyPtr(p.MaxRunSeconds),
		MaxMemMB: copyPtr(p.MaxMemMB), MaxUserActive: copyPtr(p.MaxUserActive), MaxUserQueued: copyPtr(p.MaxUserQueued),
	}
}

// primeFromLog converts a logged prime time back to the language's form.
func primeFromLog(p *fsm.DeclaredPrime) *dblang.Prime {
	if p == nil {
		return nil
	}
	return &dblang.Prime{
		Windows: clone(p.Windows), TZ: p.TZ, Priority: copyPtr(p.Priority),
		MaxSize: copyPtr(p.MaxSize), MaxActive: copyPtr(p.MaxActive), MaxRunSeconds: copyPtr(p.MaxRunSeconds),
		MaxMemMB: copyPtr(p.MaxMemMB), MaxUserActive: copyPtr(p.MaxUserActive), MaxUserQueued: copyPtr(p.MaxUserQueued),
	}
}

// copyPtr returns a pointer to a copy of *p, nil for nil.
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// checkPrimeTime refuses db when a queue declares a prime-time window and
// the group does not all apply fsm.FeaturePrimeTime's level: an older
// replica would load the queue without it, and no leader of that level
// could switch it.
func checkPrimeTime(db fsm.Database, applies func(fsm.MessageType) bool) error {
	for _, q := range db.Queues {
		if q.Prime != nil && !applies(fsm.FeaturePrimeTime.Level) {
			return fmt.Errorf("load a database with a prime-time window on queue %s: %w", q.Name, errUpgradeFirst)
		}
	}
	return nil
}

// primeToWire renders a queue's prime time: its windows, whether they are
// open, the values outside and inside them, and the next change by now.
func primeToWire(q fsm.QueueView, now time.Time) *client.QueuePrime {
	p := q.Prime
	if p == nil {
		return nil
	}
	out := &client.QueuePrime{
		Windows: clone(p.Windows), TZ: p.TZ, Open: q.PrimeState.Open, Since: q.PrimeState.At,
		Outside: queueValues(q.Declared.InForce(false)), Inside: queueValues(q.Declared.InForce(true)),
	}
	if out.TZ == "" {
		out.TZ = "UTC"
	}
	out.Next, out.NextOpen = prime.NextChange(p, q.PrimeState, now)
	return out
}

// queueValues is a queue's priority and limits for the wire.
func queueValues(q fsm.DeclaredQueue) client.QueueValues {
	return client.QueueValues{
		Priority: q.Priority, MaxSize: q.MaxSize, MaxActive: q.MaxActive, MaxRunSeconds: q.MaxRunSeconds,
		MaxMemMB: q.MaxMemMB, MaxUserActive: q.MaxUserActive, MaxUserQueued: q.MaxUserQueued,
	}
}
