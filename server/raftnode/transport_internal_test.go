package raftnode

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Both of Raft's transports, TLS and plain, replicate without a pipeline
// (maxRPCsInFlight): hashicorp/raft's pipeline deadlocks on a follower
// that answers Success=false, as one whose log disk is full does.
func TestTransportsReplicateWithoutPipeline(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"))
	cfgs := map[string]*Config{
		"tls":   {Name: "s0", Addr: "127.0.0.1:0", TLS: p.material(serverID("s0")), Logger: slog.New(slog.DiscardHandler)},
		"plain": {Name: "s0", Addr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			tr, err := newNetworkTransport(cfg, nil, hclog.NewNullLogger())
			if err != nil {
				t.Fatalf("transport: %v", err)
			}
			t.Cleanup(func() { _ = tr.Close() })
			_, err = tr.AppendEntriesPipeline("s1", raft.ServerAddress(tr.LocalAddr()))
			if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
				t.Errorf("AppendEntriesPipeline: %v, want %v", err, raft.ErrPipelineReplicationNotSupported)
			}
		})
	}
}
