package server

import (
	"log/slog"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/dispatch"
	"github.com/netmgr/netmgr/server/duty"
)

// dutyHandle is the server as its leader duties see it (duty.Handle):
// apply, the database, the group's command level and the logger.
type dutyHandle struct{ s *Server }

var _ duty.Handle = dutyHandle{}

// Apply is Server.apply.
func (h dutyHandle) Apply(t fsm.MessageType, body any) (*fsm.Result, error) {
	return h.s.apply(t, body)
}

// Read reads the server's copy of the database.
func (h dutyHandle) Read(fn func(fsm.View)) { h.s.fsm.Read(fn) }

// Watch watches the server's copy of the database.
func (h dutyHandle) Watch() (uint64, <-chan struct{}) { return h.s.fsm.Watch() }

// Applies is Server.groupApplies.
func (h dutyHandle) Applies(t fsm.MessageType) bool { return h.s.groupApplies(t) }

// Log is the server's logger.
func (h dutyHandle) Log() *slog.Logger { return h.s.log }

// newDispatcher is a leader term's dispatcher (server/dispatch), with what
// it needs of the server besides its handle.
func (s *Server) newDispatcher() *dispatch.Dispatcher {
	m := s.metrics
	return dispatch.New(dutyHandle{s}, dispatch.Config{
		StubClient:     s.stubClient,
		CommitChildren: s.commitChildren,
		Servers: func() []string {
			var out []string
			for _, meta := range s.gossip.servers() {
				out = append(out, meta.HTTP)
			}
			return out
		},
		MaxCopySize: s.maxCopySize(),
		Metrics: dispatch.Metrics{
			StartRequests: m.startRequests, StartsFailed: m.startsFailed,
			StartLatency: m.dispatchSeconds, SignalsSent: m.signalsSent,
		},
	})
}
