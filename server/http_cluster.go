package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

func (s *Server) handleMachines(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	pool := s.pool(now)
	var out []client.Machine
	s.fsm.Read(func(v fsm.View) {
		ms := v.Machines()
		out = make([]client.Machine, 0, len(ms))
		for _, m := range ms {
			wm := machineToWire(m, v.Running(m.Name), pool[m.Name].Meta.Load)
			if g := pool[m.Name]; wm.State == client.MachineUp && g.Suspect {
				wm.State = client.MachineSuspect
			}
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

// self describes this server as it sees itself.
func (s *Server) self() client.Server {
	stats := s.raft.Stats()
	term, _ := strconv.ParseUint(stats["term"], 10, 64)
	_, leader := s.raft.LeaderWithID()
	role := "unknown"
	switch s.raft.State() {
	case raft.Leader:
		role = "leader"
	case raft.Follower:
		role = "follower"
	case raft.Candidate:
		role = "candidate"
	case raft.Shutdown:
		role = "shutdown"
	}
	contact, healthy := lastContact(role, stats["last_contact"])
	return client.Server{
		Name:        s.cfg.Name,
		Address:     string(s.node.transport.LocalAddr()),
		HTTP:        s.HTTPAddr(),
		Role:        role,
		Term:        term,
		LastIndex:   s.raft.LastIndex(),
		Leader:      string(leader),
		LastContact: contact,
		Healthy:     healthy && leader != "",
	}
}

// healthyContact is how recently a follower must have heard from its
// leader to be healthy: two of the production heartbeat timeouts.
const healthyContact = 2 * 500 * time.Millisecond

// lastContact normalizes raft.Stats()["last_contact"] ("never", "0" on the
// leader, or a duration) to "leader", "never" or a duration rounded to the
// millisecond, and reports whether that contact is recent enough.
func lastContact(role, stat string) (string, bool) {
	switch {
	case role == "leader":
		return "leader", true
	case stat == "never" || stat == "":
		return "never", false
	case stat == "0":
		// The leader's own value; a server that just lost leadership.
		return "0s", true
	}
	d, err := time.ParseDuration(stat)
	if err != nil {
		return stat, false
	}
	if d >= time.Millisecond {
		d = d.Round(time.Millisecond)
	}
	return d.String(), d <= healthyContact
}

func (s *Server) handleSelf(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, s.self())
}

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

func (s *Server) askSelf(ctx context.Context, addr string) (client.Server, error) {
	var peer client.Server
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/agent/self", nil)
	if err != nil {
		return peer, fmt.Errorf("ask %s: %w", addr, err)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return peer, fmt.Errorf("ask %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&peer); err != nil {
		return peer, fmt.Errorf("read answer of %s: %w", addr, err)
	}
	return peer, nil
}
