package stub

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Joining the pool again. memberlist gives up on a member it holds dead
// for good: it stops gossiping to it GossipToTheDeadTime (30 s) after the
// failure and then forgets it. When every server is down that long, the
// stubs end up in a pool of their own and the restarted servers in
// another, and nothing in memberlist joins the two again. So a stub that
// holds no server alive joins its --join addresses and every server it
// has seen, until one of them answers; the leader does the same from its
// side (server/rejoin).
const (
	// rejoinMin is the pause after the first failed join; each further
	// failure doubles it, up to rejoinMax. The first join after the last
	// server is lost is at once.
	rejoinMin = 500 * time.Millisecond
	// rejoinMax caps the pause between joins, and is how often a stub
	// that sees a server checks that it still does.
	rejoinMax = 4 * time.Second
)

// seenChange is what one membership event did to the live servers.
type seenChange int

const (
	seenSame       seenChange = iota
	lastServerGone            // the last live server failed or left
	serverBack                // a server is alive again after lastServerGone
)

// seenServers is the stub's memory of the servers it has seen in gossip:
// the gossip address of each, kept after the server fails or leaves so
// that the stub can join it again, and which of them are alive now. It is
// not safe for concurrent use (gossip.mu guards it).
type seenServers struct {
	addr  map[string]string // node name -> gossip address, host:port
	alive map[string]bool
	lost  bool // every server was lost, and none is back yet
}

func newSeenServers() seenServers {
	return seenServers{addr: make(map[string]string), alive: make(map[string]bool)}
}

// update records one event about node, at gossip address addr: server is
// whether its metadata says it is a server, left whether it failed or
// left.
func (s *seenServers) update(node, addr string, server, left bool) seenChange {
	before := len(s.alive)
	switch {
	case left:
		delete(s.alive, node)
	case server:
		s.alive[node] = true
		if addr != "" {
			s.addr[node] = addr
		}
	default: // a member that is not (or no longer) a server
		delete(s.alive, node)
		delete(s.addr, node)
	}
	switch after := len(s.alive); {
	case before > 0 && after == 0:
		s.lost = true
		return lastServerGone
	case before == 0 && after > 0 && s.lost:
		s.lost = false
		return serverBack
	}
	return seenSame
}

// live returns how many servers are alive.
func (s *seenServers) live() int { return len(s.alive) }

// addrs returns the gossip addresses of every server seen.
func (s *seenServers) addrs() []string {
	out := make([]string, 0, len(s.addr))
	for _, a := range s.addr {
		out = append(out, a)
	}
	return out
}

// liveServers returns how many servers the stub's view of the pool holds
// alive.
func (g *gossip) liveServers() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen.live()
}

// joinCandidates returns the addresses keepJoined tries: the --join ones
// and the gossip address of every server seen, sorted and distinct, but
// for the stub's own.
func (g *gossip) joinCandidates(join []string) []string {
	g.mu.Lock()
	all := append(slices.Clone(join), g.seen.addrs()...)
	g.mu.Unlock()
	slices.Sort(all)
	all = slices.Compact(all)
	return slices.DeleteFunc(all, func(a string) bool { return a == g.addr })
}

// keepJoined joins the pool at start, and again whenever the stub's view
// of it holds no live server: at once when the last one is lost, then
// with a backoff from rejoinMin doubling to rejoinMax, until a server is
// seen again. It returns when ctx ends.
func (g *gossip) keepJoined(ctx context.Context, join []string) {
	first := true
	backoff := rejoinMin
	wait := time.Duration(0)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-g.lost:
			t.Stop()
			backoff = rejoinMin
		case <-t.C:
		}
		if g.leaving.Load() {
			return
		}
		if g.liveServers() > 0 {
			backoff, wait = rejoinMin, rejoinMax
			continue
		}
		addrs := g.joinCandidates(join)
		if len(addrs) == 0 { // nothing to join: another member may join us
			wait = rejoinMax
			continue
		}
		n, err := g.joinEach(addrs)
		switch {
		case n > 0 && first:
			first = false
			g.log.Info("joined gossip pool", "via", n, "members", g.ml.NumMembers())
		case n > 0:
			g.log.Debug("joined gossip pool again", "via", n, "members", g.ml.NumMembers())
		case err != nil && g.ml.Refused(err.Error()):
			// A key problem: logged as a warning.
		default:
			g.log.Debug("gossip join failed; retrying", "addrs", addrs, "err", err)
		}
		// Spread the stubs' joins: a server that comes back should not
		// meet every stub's full-state exchange at the same instant.
		wait = backoff/2 + rand.N(backoff/2)
		backoff = min(2*backoff, rejoinMax)
	}
}

// joinEach joins every address at once, each on its own (memberlist's
// Join tries its addresses one after the other, each for up to its TCP
// timeout), and returns how many answered and the last error.
func (g *gossip) joinEach(addrs []string) (int, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex // guards n and lastErr
		n       int
		lastErr error
	)
	for _, a := range addrs {
		wg.Go(func() {
			k, err := g.ml.Join([]string{a})
			mu.Lock()
			n += k
			if err != nil {
				lastErr = err
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return n, lastErr
}
