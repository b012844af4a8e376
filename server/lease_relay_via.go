package server

import (
	"hash/fnv"
	"slices"
	"sync"
	"time"
)

// relayRamp is how long a server that comes back (alive in gossip again
// after the leader lost it, or for the first time since the leader
// started) takes to be named in RenewVia for its whole share of the
// pool: a growing part of the machines that hash to it, the rest staying
// with the servers that were there all along. Named at once, a server
// restarted in a pool of 5,000 machines had some 2,500 stubs open a lease
// stream with it, each a TLS handshake, within a renewal interval (1.5
// s): on 2 cores the leader's followers went silent past Raft's 500 ms
// within 6 s and the group lost its leader, election after election
// (doc/benchmark.md). Over a minute, that half of 10,000 machines is some
// 80 handshakes a second; stubs keep a stream waiting with every server
// (client's lease_standby.go), so most move without one.
const relayRamp = time.Minute

// relayVia is the leader's list of the servers it names in RenewVia,
// looked at again every relayViaEvery, and when each came (back).
type relayVia struct {
	mu     sync.Mutex // guards the fields below
	at     time.Time
	looked bool // some look found the list: later arrivals ramp up
	addrs  []string
	// since is when each of addrs came (back): zero for the servers
	// there at the first look, which take their whole share at once.
	since []time.Time
}

// refresh makes addrs the servers named, keeping when each that was
// already there came and stamping the new ones now (zero at the first
// look). A server that left and came back is new.
func (v *relayVia) refresh(addrs []string, now time.Time) {
	since := make([]time.Time, len(addrs))
	for i, a := range addrs {
		if j := slices.Index(v.addrs, a); j >= 0 {
			since[i] = v.since[j]
		} else if v.looked {
			since[i] = now
		}
	}
	v.at, v.addrs, v.since = now, addrs, since
	v.looked = v.looked || len(addrs) > 0
}

// pick returns the address of the server machine renews through at now:
// the one its hash names, if that server has ramped up far enough for
// the machine's share (relayRamp), else one of those there all along
// (or fully ramped) by the same hash; the hash's server when none is.
func (v *relayVia) pick(machine string, now time.Time) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(machine))
	sum := h.Sum32()
	n := uint32(len(v.addrs))
	i := sum % n
	in := func(j uint32) bool { return v.since[j].IsZero() || now.Sub(v.since[j]) >= relayRamp }
	// The machine's place in its server's share, 0-999, from other bits of
	// its hash than those that chose the server.
	place := time.Duration((sum / n) % 1000)
	if in(i) || place*relayRamp < 1000*now.Sub(v.since[i]) {
		return v.addrs[i]
	}
	var full []uint32
	for j := range n {
		if in(j) {
			full = append(full, j)
		}
	}
	if len(full) == 0 {
		return v.addrs[i]
	}
	return v.addrs[full[sum%uint32(len(full))]]
}

// renewVia is the API address of the server on whose stream machine's
// stub renews in a pool of pool machines (LeaseResponse.RenewVia): ""
// below Config.LeaseRelayFrom or when no other server of the Raft
// configuration is alive in gossip.
func (s *Server) renewVia(machine string, pool int) string {
	if s.cfg.LeaseRelayFrom == 0 || pool < s.cfg.LeaseRelayFrom {
		return ""
	}
	v := &s.via
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	if now.Sub(v.at) >= relayViaEvery {
		v.refresh(s.relayServers(), now)
	}
	if len(v.addrs) == 0 {
		return ""
	}
	return v.pick(machine, now)
}

// relayServers returns the API addresses of the servers but this one that
// are in the Raft configuration and alive in gossip, ordered by name.
func (s *Server) relayServers() []string {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	live := s.gossip.servers()
	var names []string
	for _, srv := range f.Configuration().Servers {
		name := string(srv.ID)
		if meta, ok := live[name]; ok && name != s.cfg.Name && meta.HTTP != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	addrs := make([]string, len(names))
	for i, name := range names {
		addrs[i] = live[name].HTTP
	}
	return addrs
}
