package dutytest

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/duty"
)

// Handle is a duty.Handle over a database of the test's own. Safe for
// concurrent use.
type Handle struct {
	// FSM is the database the handle reads and applies to.
	FSM *fsm.FSM

	level atomic.Uint32
	log   *slog.Logger

	mu    sync.Mutex // guards index and raft
	index uint64     // the last index applied without Raft
	raft  *raft.Raft
}

var _ duty.Handle = (*Handle)(nil)

// New returns a handle over an empty database, logging nowhere, with
// every command type applied by the group.
func New() *Handle {
	h := &Handle{FSM: fsm.New(), log: slog.New(slog.DiscardHandler)}
	h.level.Store(uint32(fsm.CommandLevel))
	return h
}

// WithRaft makes the handle's database the state machine of a one-server
// Raft group in memory, which it leads by the time WithRaft returns;
// Apply then goes through Raft. Call it before anything is applied. The
// group shuts down when the test ends.
func (h *Handle) WithRaft(t testing.TB) *Handle {
	t.Helper()
	conf := raft.DefaultConfig()
	conf.LocalID = "s1"
	conf.HeartbeatTimeout, conf.ElectionTimeout = 50*time.Millisecond, 50*time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.Logger = hclog.NewNullLogger()
	store, snaps := raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	addr, trans := raft.NewInmemTransport("")
	boot := raft.Configuration{Servers: []raft.Server{{ID: conf.LocalID, Address: addr}}}
	if err := raft.BootstrapCluster(conf, store, store, snaps, trans, boot); err != nil {
		t.Fatalf("bootstrap raft: %v", err)
	}
	r, err := raft.NewRaft(conf, h.FSM, store, store, snaps, trans)
	if err != nil {
		t.Fatalf("start raft: %v", err)
	}
	t.Cleanup(func() { _ = r.Shutdown().Error() })
	select {
	case <-r.LeaderCh():
	case <-time.After(10 * time.Second):
		t.Fatalf("no leader after 10 s")
	}
	h.mu.Lock()
	h.raft = r
	h.mu.Unlock()
	return h
}

// Raft is the handle's Raft group, nil before WithRaft: a test shuts it
// down to see a duty's commits fail.
func (h *Handle) Raft() *raft.Raft {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.raft
}

// SetLevel sets the group's command level that Applies answers by.
func (h *Handle) SetLevel(t fsm.MessageType) { h.level.Store(uint32(t)) }

// Apply encodes the command and applies it: through Raft after WithRaft,
// else to the database at the next index.
func (h *Handle) Apply(t fsm.MessageType, body any) (*fsm.Result, error) {
	data, err := fsm.Encode(t, body)
	if err != nil {
		return nil, err
	}
	if r := h.Raft(); r != nil {
		f := r.Apply(data, 10*time.Second)
		if err := f.Error(); err != nil {
			return nil, fmt.Errorf("apply %v: %w", t, err)
		}
		res, ok := f.Response().(*fsm.Result)
		if !ok {
			return nil, fmt.Errorf("apply %v: unexpected response %T", t, f.Response())
		}
		return res, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.index++
	return h.FSM.Apply(&raft.Log{Type: raft.LogCommand, Index: h.index, Data: data}).(*fsm.Result), nil
}

// MustApply is Apply, failing the test on an error or a refusal.
func (h *Handle) MustApply(t testing.TB, typ fsm.MessageType, body any) *fsm.Result {
	t.Helper()
	res, err := h.Apply(typ, body)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("apply %v: %v", typ, err)
	}
	return res
}

// Read reads the database.
func (h *Handle) Read(fn func(fsm.View)) { h.FSM.Read(fn) }

// Watch watches the database.
func (h *Handle) Watch() (uint64, <-chan struct{}) { return h.FSM.Watch() }

// Applies reports whether t is at or below the level SetLevel set.
func (h *Handle) Applies(t fsm.MessageType) bool { return fsm.MessageType(h.level.Load()) >= t }

// Log is a logger that writes nowhere.
func (h *Handle) Log() *slog.Logger { return h.log }

// Index is the applied index of the database.
func (h *Handle) Index() uint64 {
	i, _ := h.FSM.Watch()
	return i
}
