package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestLeaseRestoredReportsTheDatabaseIndex: the renewal that finds its
// machine unreachable commits LeaseRestored and reports the machine's
// ModifyIndex as the database then has it, the index every Start the
// leader builds from then on carries (dispatch: StartRequest.MachineIndex),
// so the stub, which admits a restartable Start only at or above the
// index its last renewal reported, refuses none of them.
//
//   - the entry brings the machine back: the entry's index, as before;
//   - a StubJoin committed after the renewal read the machine unreachable
//     and before its LeaseRestored (membership saw the stub alive again
//     first) brought it back: the join's index, not that of the
//     LeaseRestored, which changed nothing. Reporting the latter held the
//     stub above every Start (the failover bench, 2 runs of 15).
//
// The machine is a stub's client with the stub's certificate, with no
// stub behind it, so that the test decides when each renewal is sent;
// the leader's database is held (HoldFSMRead) to commit the StubJoin
// after the renewal has read the machine unreachable.
func TestLeaseRestoredReportsTheDatabaseIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts 3 servers")
	}
	c := servertest.NewCluster(t, 3)
	s := c.Servers[c.WaitLeader()]
	const name = "lazarus"
	facts := fsm.MachineFacts{Name: name, Arch: "x86_64", CPUs: 2, MemoryMB: 1024, Addr: "127.0.0.1:9"}
	join := func() uint64 {
		t.Helper()
		res, err := s.Apply(fsm.StubJoinType, fsm.StubJoin{At: time.Now().UTC(), Machine: facts})
		if err != nil || res.Err != nil {
			t.Fatalf("commit the StubJoin: %v %v", err, res)
		}
		return res.Index
	}
	expire := func() uint64 {
		t.Helper()
		res, err := s.Apply(fsm.LeaseExpiredType, fsm.LeaseExpired{At: time.Now().UTC(), Machine: name})
		if err != nil || res.Err != nil {
			t.Fatalf("commit the LeaseExpired: %v %v", err, res)
		}
		if m, _ := s.LocalMachine(name); m.State != fsm.MachineUnreachable {
			t.Fatalf("after LeaseExpired the machine is %s, want %s", m.State, fsm.MachineUnreachable)
		}
		return res.Index
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stubClient := c.ClientFor(pki.Identity{Role: pki.RoleStub, Name: name})
	renew := func() client.LeaseResponse {
		resp, err := stubClient.RenewLease(ctx, client.LeaseRequest{Machine: name})
		if err != nil {
			t.Errorf("renew %s's lease: %v", name, err)
		}
		return resp
	}
	// settle returns the index of the leader's last log entry once the
	// commit nudge's barrier after the last write (10 ms) is in.
	settle := func(write uint64) uint64 {
		t.Helper()
		testwait.For(t, 10*time.Second, "the commit nudge's barrier", func() bool { return s.RaftLastIndex() > write })
		return s.RaftLastIndex()
	}
	join()
	renew() // the leader counts a renewal: its expiry duty leaves the machine alone

	t.Run("the entry brings it back", func(t *testing.T) {
		expired := expire()
		resp := renew()
		m, _ := s.LocalMachine(name)
		if m.State != fsm.MachineUp || m.ModifyIndex <= expired {
			t.Fatalf("after the renewal the machine is %s at index %d, want %s above the LeaseExpired's %d", m.State, m.ModifyIndex, fsm.MachineUp, expired)
		}
		if resp.MachineIndex != m.ModifyIndex {
			t.Errorf("the renewal reported machine index %d, want the LeaseRestored's, the database's %d", resp.MachineIndex, m.ModifyIndex)
		}
	})

	t.Run("a StubJoin brought it back first", func(t *testing.T) {
		last := settle(expire())
		release := make(chan struct{})
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		s.HoldFSMRead(release)
		// With the database held, nothing is applied: the book still
		// holds the machine unreachable. The StubJoin goes first into
		// the log, then the renewal reads the book and proposes its
		// LeaseRestored behind it.
		joined := make(chan uint64, 1)
		go func() {
			res, err := s.Apply(fsm.StubJoinType, fsm.StubJoin{At: time.Now().UTC(), Machine: facts})
			if err != nil || res.Err != nil {
				t.Errorf("commit the StubJoin: %v %v", err, res)
				joined <- 0
				return
			}
			joined <- res.Index
		}()
		testwait.For(t, 10*time.Second, "the StubJoin in the log", func() bool { return s.RaftLastIndex() > last })
		renewed := make(chan client.LeaseResponse, 1)
		go func() { renewed <- renew() }()
		testwait.For(t, 10*time.Second, "the renewal's LeaseRestored in the log", func() bool { return s.RaftLastIndex() > last+1 })
		released = true
		close(release)
		joinIndex, resp := <-joined, <-renewed
		if joinIndex != last+1 {
			t.Fatalf("the StubJoin is entry %d, want %d: another entry came between (rerun)", joinIndex, last+1)
		}
		m, _ := s.LocalMachine(name)
		if m.State != fsm.MachineUp || m.ModifyIndex != joinIndex {
			t.Fatalf("the machine is %s at index %d, want %s at the StubJoin's %d (the LeaseRestored after it changed nothing)",
				m.State, m.ModifyIndex, fsm.MachineUp, joinIndex)
		}
		if resp.MachineIndex != m.ModifyIndex {
			t.Errorf("the renewal reported machine index %d, want the database's %d (the StubJoin's)", resp.MachineIndex, m.ModifyIndex)
		}
		// The next Start carries the machine's ModifyIndex; the stub
		// refuses one below the index its last renewal reported.
		if start := m.ModifyIndex; start < resp.MachineIndex {
			t.Errorf("a Start at machine index %d would be refused by a stub told %d", start, resp.MachineIndex)
		}
	})
}
