package server

import (
	"strconv"
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

// HoldFSMRead holds a read lock on the server's database until release
// is closed, and returns once it holds it: with a write queued behind it,
// every other reader of the database waits too.
func (s *Server) HoldFSMRead(release <-chan struct{}) {
	held := make(chan struct{})
	go s.fsm.Read(func(fsm.View) {
		close(held)
		<-release
	})
	<-held
}

// FSMReadWaits reports whether Raft has committed an entry past index
// and a new read of the server's database is still waiting after d: a
// write is queued behind a held read. The read goes on in the background
// and ends when the database is free.
func (s *Server) FSMReadWaits(index uint64, d time.Duration) bool {
	if commit, _ := strconv.ParseUint(s.raft.Stats()["commit_index"], 10, 64); commit <= index {
		return false
	}
	done := make(chan struct{})
	go s.fsm.Read(func(fsm.View) { close(done) })
	select {
	case <-done:
		return false
	case <-time.After(d):
		return true
	}
}

// Apply commits a command through Raft and waits for this server to
// apply it, for tests that set up a database state (a machine joined, a
// lease expired) no request of theirs would make in the order they need.
func (s *Server) Apply(t fsm.MessageType, body any) (*fsm.Result, error) {
	return s.apply(t, body)
}

// LocalMachine returns machine name as this server's copy of the state
// holds it.
func (s *Server) LocalMachine(name string) (fsm.Machine, bool) {
	var m fsm.Machine
	var ok bool
	s.fsm.Read(func(v fsm.View) {
		var p *fsm.Machine
		if p, ok = v.Machine(name); ok {
			m = *p
		}
	})
	return m, ok
}

// RaftLastIndex is the index of the last entry in this server's Raft log,
// committed or not.
func (s *Server) RaftLastIndex() uint64 { return s.raft.LastIndex() }
