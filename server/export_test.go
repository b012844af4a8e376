package server

import (
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// What the external tests (package server_test) reach of the server's
// internals.

// TokenUser is tokenUser, for tests that present tokens to a server
// without the identity layer in front of it.
func (s *Server) TokenUser(token string, now time.Time) (string, error) {
	return s.tokenUser(token, now)
}

// SweepTokens is sweepTokens, for tests that sweep as if at now.
func (s *Server) SweepTokens(now time.Time) { s.sweepTokens(now) }

// The token errors, for errors.Is in tests.
var (
	ErrTokenMalformed = errTokenMalformed
	ErrTokenUnknown   = errTokenUnknown
	ErrTokenExpired   = errTokenExpired
)

// PendingMail is how many mails this server's copy of the state holds
// pending.
func (s *Server) PendingMail() int {
	var n int
	s.fsm.Read(func(v fsm.View) { n = v.PendingMailCount() })
	return n
}

// LocalJobs lists the ids of the jobs this server's copy of the state
// holds, with the index it has applied.
func (s *Server) LocalJobs() (uint64, []uint64) {
	var ids []uint64
	var index uint64
	s.fsm.Read(func(v fsm.View) {
		index = v.Index()
		for _, j := range v.Jobs() {
			ids = append(ids, j.ID)
		}
	})
	return index, ids
}

// LocalEvents returns the events of kind in this server's event ring.
func (s *Server) LocalEvents(kind string) []fsm.Event {
	var out []fsm.Event
	s.fsm.Read(func(v fsm.View) {
		for _, e := range v.EventsSince(0) {
			if e.Kind == kind {
				out = append(out, e)
			}
		}
	})
	return out
}

// SweepBlobs is sweepBlobsOnce, for tests that sweep the blob store as if
// every blob written before cutoff were old enough.
func (s *Server) SweepBlobs(cutoff time.Time) int { return s.sweepBlobsOnce(cutoff) }

// HasBlob reports whether this server's blob store holds sum.
func (s *Server) HasBlob(sum string) bool { return s.blobs.Has(sum) }

// DropBlob removes sum from this server's blob store, as a server that
// was down during its upload lacks it.
func (s *Server) DropBlob(sum string) error { return s.blobs.Remove(sum) }

// LocalOrder is the order a scheduling pass over this server's copy of
// the state takes the waiting work in: job ids, one per instance.
func (s *Server) LocalOrder() []uint64 {
	var out []uint64
	s.fsm.Read(func(v fsm.View) {
		planner.New(v, nil, time.Now()).Run(func(it queue.Item, _ *fsm.Instance, _ matcher.Result, _ *planner.Held) {
			out = append(out, it.JobID)
		})
	})
	return out
}

// LocalUsage is user's usage record in this server's copy of the state.
func (s *Server) LocalUsage(user string) queue.Usage {
	var u queue.Usage
	s.fsm.Read(func(v fsm.View) { u = v.UserUsage(user) })
	return u
}
