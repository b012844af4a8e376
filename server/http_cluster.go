package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleMachines lists the machines with their effective attributes, the
// load and running count the leader sees, and the reservation in force.
func (s *Server) handleMachines(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	pool := s.pool(now)
	var out []client.Machine
	s.fsm.Read(func(v fsm.View) {
		ms := v.Machines()
		out = make([]client.Machine, 0, len(ms))
		for _, m := range ms {
			wm := machineToWire(m, v.Running(m.Name), pool[m.Name].Meta.Load, pool[m.Name].Suspect)
			wm.ExecUsedBytes = pool[m.Name].Meta.ExecUsed
			wm.Resources = resourcesToWire(v, m)
			for _, r := range v.Reservations() {
				if r.InForce(now) && slices.Contains(r.Machines, m.Name) {
					wm.ReservedBy, wm.ReservedUntil = r.Owner, r.Until
					break
				}
			}
			out = append(out, wm)
		}
	})
	s.writeJSON(w, http.StatusOK, out)
}

// handleSelf answers GET /v1/agent/self: this server as it sees itself.
func (s *Server) handleSelf(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, s.self())
}

// handleHealth answers that the server is up.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleServers lists the Raft configuration, asking each member for its
// own view (role, term, last index) with a short timeout; a member that
// does not answer is listed with the error.
func (s *Server) handleServers(w http.ResponseWriter, r *http.Request) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		s.writeError(w, http.StatusServiceUnavailable, fmt.Errorf("read raft configuration: %w", err))
		return
	}
	members := f.Configuration().Servers
	pool := s.gossip.servers()
	out := make([]client.Server, len(members))
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, m := range members {
		out[i] = client.Server{Name: string(m.ID), Address: string(m.Address), Role: "unknown"}
		if string(m.ID) == s.cfg.Name {
			out[i] = s.self()
			continue
		}
		meta, ok := pool[string(m.ID)]
		if !ok {
			out[i].Error = "not in the gossip pool"
			continue
		}
		out[i].HTTP = meta.HTTP
		wg.Add(1)
		go func() {
			defer wg.Done()
			peer, err := s.askSelf(ctx, meta.HTTP)
			if err != nil {
				out[i].Error = err.Error()
				return
			}
			out[i] = peer
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b client.Server) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	s.writeJSON(w, http.StatusOK, out)
}
