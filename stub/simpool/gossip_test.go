package simpool

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// serverNode is a real memberlist node standing in for a server: it
// gossips a server's metadata and records what its event delegate hears.
type serverNode struct {
	ml *memberlist.Memberlist

	mu     sync.Mutex
	joined map[string]bool
	left   map[string]bool
}

func (s *serverNode) NotifyJoin(n *memberlist.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.joined[n.Name], s.left[n.Name] = true, false
}

func (s *serverNode) NotifyLeave(n *memberlist.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left[n.Name] = true
}

func (*serverNode) NotifyUpdate(*memberlist.Node) {}

// heard reports whether the node heard name join, and leave (or fail).
func (s *serverNode) heard(name string) (joined, left bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joined[name], s.left[name]
}

// state returns the node's view of member name, and whether it holds one.
func (s *serverNode) state(name string) (memberlist.NodeStateType, bool) {
	for _, n := range s.ml.Members() {
		if n.Name == name {
			return n.State, true
		}
	}
	return 0, false
}

type metaDelegate []byte

func (d metaDelegate) NodeMeta(int) []byte               { return d }
func (metaDelegate) NotifyMsg([]byte)                    {}
func (metaDelegate) GetBroadcasts(int, int) [][]byte     { return nil }
func (metaDelegate) LocalState(bool) []byte              { return nil }
func (metaDelegate) MergeRemoteState(buf []byte, _ bool) {}

// fastConfig is memberlist's LAN configuration, compression off as
// netmgr's nodes run it, with probes every 100 ms and a suspicion of
// 2 s, so that a test sees suspicion and death within seconds.
func fastConfig(name string, keys [][]byte) *memberlist.Config {
	c := memberlist.DefaultLANConfig()
	c.Name = name
	c.BindAddr, c.AdvertiseAddr = "127.0.0.1", "127.0.0.1"
	c.BindPort, c.AdvertisePort = 0, 0
	c.EnableCompression = false
	c.ProbeInterval, c.ProbeTimeout = 100*time.Millisecond, 50*time.Millisecond
	c.SuspicionMult = 20
	c.GossipInterval = 50 * time.Millisecond
	c.Logger = log.New(io.Discard, "", 0)
	if len(keys) > 0 {
		ring, err := memberlist.NewKeyring(keys, keys[0])
		if err != nil {
			panic(err)
		}
		c.Keyring = ring
		c.GossipVerifyIncoming, c.GossipVerifyOutgoing = true, true
	}
	return c
}

// startServerNode starts a real memberlist node with a server's metadata,
// its fastConfig changed by edit.
func startServerNode(t *testing.T, name string, keys [][]byte, edit ...func(*memberlist.Config)) *serverNode {
	t.Helper()
	s := &serverNode{joined: make(map[string]bool), left: make(map[string]bool)}
	meta, err := json.Marshal(client.NodeMeta{Role: client.RoleServer, HTTP: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	c := fastConfig(name, keys)
	c.Delegate, c.Events = metaDelegate(meta), s
	for _, e := range edit {
		e(c)
	}
	if s.ml, err = memberlist.Create(c); err != nil {
		t.Fatalf("start memberlist node: %v", err)
	}
	t.Cleanup(func() { _ = s.ml.Shutdown() })
	return s
}

// startPool starts n simulated machines, without TLS, joining addr; when
// shared, on shared sockets, machine i at 127.88.0.(i+1).
func startPool(t *testing.T, n int, addr string, keys [][]byte, shared bool) *Pool {
	t.Helper()
	cfg := Config{Join: []string{addr}, Keys: keys, RunTime: time.Hour, Facts: client.Facts{Arch: "x86_64", CPUs: 1}, Shared: shared}
	for i := range n {
		cfg.Names = append(cfg.Names, "sim-"+strconv.Itoa(i))
		host := "127.0.0.1"
		if shared {
			host = "127.88.0." + strconv.Itoa(i+1)
		}
		cfg.HTTPAddrs = append(cfg.HTTPAddrs, host+":0")
		cfg.GossipAddrs = append(cfg.GossipAddrs, host+":0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start pool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

var testKey = [][]byte{[]byte("0123456789abcdef")}

// TestMemberProbed has a real memberlist node probe simulated members: it
// sees them join and stay alive; a member that stops answering is
// suspected, refutes the suspicion once it answers again, and is declared
// dead once killed. In the clear and encrypted, on sockets of their own
// and on shared ones.
func TestMemberProbed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		keys   [][]byte
		shared bool
	}{{"clear", nil, false}, {"encrypted", testKey, false}, {"shared sockets, encrypted", testKey, true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startServerNode(t, "server-a", tt.keys)
			p := startPool(t, 3, srv.ml.LocalNode().Address(), tt.keys, tt.shared)
			testwait.For(t, 10*time.Second, "the node to hold 3 simulated members", func() bool {
				return srv.ml.NumMembers() == 4
			})
			if got := p.serverAddrs(); len(got) != 1 || got[0] != "127.0.0.1:1" {
				t.Errorf("servers learned from the join = %v, want [127.0.0.1:1]", got)
			}
			// Probed every 100 ms, 3 members for 1 s: about 10 probes each.
			testwait.Holds(t, time.Second, "every simulated member alive", func() bool {
				for _, m := range p.Machines() {
					if st, ok := srv.state(m.Name()); !ok || st != memberlist.StateAlive {
						return false
					}
				}
				return true
			})

			// Mute for two probes' worth of packets (each probe of a
			// member that does not answer sends it a ping, pings from the
			// other members asked to help, and a ping on TCP), by which
			// time the node suspects it; once it answers again, the next
			// probe carries the suspicion, which it refutes.
			m := p.Machine("sim-1")
			m.mute.Store(true)
			testwait.For(t, 10*time.Second, "probes of sim-1 dropped while mute", func() bool { return m.dropped.Load() >= 6 })
			m.mute.Store(false)
			testwait.For(t, 10*time.Second, "sim-1 refuting the suspicion", func() bool { return m.refuted.Load() > 0 })
			testwait.Holds(t, 3*time.Second, "sim-1 not declared dead (the suspicion lasts 2 s)", func() bool {
				_, left := srv.heard("sim-1")
				st, ok := srv.state("sim-1")
				return !left && ok && st == memberlist.StateAlive
			})
			if got := p.Stats(); got.Refuted < 1 || got.Machines != 3 {
				t.Errorf("Stats = %+v, want 3 machines and a refutation", got)
			}

			if err := p.Kill("sim-2"); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 20*time.Second, "sim-2 declared dead after the kill", func() bool {
				_, left := srv.heard("sim-2")
				return left
			})
			if _, left := srv.heard("sim-0"); left {
				t.Errorf("sim-0 declared dead, though it runs")
			}
		})
	}
}

// TestMemberPushPull has a real node join a simulated member (the leader
// does, when it misses a machine): the push/pull is answered with the
// member's own state.
func TestMemberPushPull(t *testing.T) {
	for _, tt := range []struct {
		name   string
		keys   [][]byte
		shared bool
	}{{"clear", nil, false}, {"encrypted", testKey, false}, {"shared sockets", nil, true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startServerNode(t, "server-a", tt.keys)
			p := startPool(t, 1, srv.ml.LocalNode().Address(), tt.keys, tt.shared)
			other := startServerNode(t, "server-b", tt.keys)
			n, err := other.ml.Join([]string{p.Machine("sim-0").GossipAddr()})
			if err != nil || n != 1 {
				t.Fatalf("join the simulated member = %d, %v; want 1, nil", n, err)
			}
			if st, ok := other.state("sim-0"); !ok || st != memberlist.StateAlive {
				t.Errorf("after the push/pull, server-b holds sim-0 %v (held %v), want alive", st, ok)
			}
		})
	}
}

// A simulated member the servers hold dead refutes it when a server joins
// it again (server/rejoin does, every 30 s), in the push/pull as
// memberlist's mergeRemoteState does: unrefuted, its answer of the same
// incarnation would leave it dead for good, as one machine of a 10,000
// pool stayed after a false failure.
func TestMemberRefutesDeathInPushPull(t *testing.T) {
	t.Parallel()
	// No gossip to the dead: the push/pull alone can bring it back.
	srv := startServerNode(t, "server-a", nil, func(c *memberlist.Config) { c.GossipToTheDeadTime = 0 })
	p := startPool(t, 1, srv.ml.LocalNode().Address(), nil, false)
	m := p.Machine("sim-0")
	testwait.For(t, 10*time.Second, "server-a to hold sim-0 alive", func() bool {
		st, ok := srv.state("sim-0")
		return ok && st == memberlist.StateAlive
	})
	m.mute.Store(true)
	testwait.For(t, 30*time.Second, "server-a to declare the mute sim-0 dead", func() bool {
		_, left := srv.heard("sim-0")
		_, held := srv.state("sim-0") // Members leaves out the dead
		return left && !held
	})
	m.mute.Store(false)
	if _, err := srv.ml.Join([]string{m.GossipAddr()}); err != nil {
		t.Fatalf("join sim-0 again: %v", err)
	}
	testwait.For(t, 10*time.Second, "sim-0 alive again on server-a", func() bool {
		st, ok := srv.state("sim-0")
		return ok && st == memberlist.StateAlive
	})
	if m.refuted.Load() == 0 {
		t.Error("sim-0 came back without refuting its death")
	}
}

// TestIndirectProbe asks a simulated member to probe for another: a live
// target's ack comes back under the asker's sequence number, a target
// that does not answer brings a nack.
func TestIndirectProbe(t *testing.T) {
	t.Parallel()
	srv := startServerNode(t, "server-a", nil)
	p := startPool(t, 1, srv.ml.LocalNode().Address(), nil, true)
	m := p.Machine("sim-0")
	asker, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer asker.Close()
	to, err := net.ResolveUDPAddr("udp", m.GossipAddr())
	if err != nil {
		t.Fatal(err)
	}
	// A UDP port with nothing behind it.
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	srvAddr := srv.ml.LocalNode()
	for _, tt := range []struct {
		name   string
		target net.IP
		port   uint16
		node   string
		want   msgType
	}{
		{"live target", srvAddr.Addr, srvAddr.Port, "server-a", ackRespMsg},
		{"silent target", net.IPv4(127, 0, 0, 1).To4(), uint16(silent.LocalAddr().(*net.UDPAddr).Port), "gone", nackRespMsg},
	} {
		seq := uint32(4000 + len(tt.name))
		req := encode(indirectPingMsg, &indirectPingReq{SeqNo: seq, Target: tt.target, Port: tt.port, Node: tt.node, Nack: true})
		pkt, err := keyring(nil).packet(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := asker.WriteToUDP(pkt, to); err != nil {
			t.Fatal(err)
		}
		_ = asker.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1500)
		n, _, err := asker.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("%s: no answer: %v", tt.name, err)
		}
		msg, err := keyring(nil).unpacket(buf[:n])
		if err != nil || len(msg) < 1 {
			t.Fatalf("%s: answer %x: %v", tt.name, buf[:n], err)
		}
		var got ackResp
		if err := decode(msg[1:], &got); err != nil {
			t.Fatalf("%s: decode answer: %v", tt.name, err)
		}
		if msgType(msg[0]) != tt.want || got.SeqNo != seq {
			t.Errorf("%s: answer type %d seq %d, want type %d seq %d", tt.name, msg[0], got.SeqNo, tt.want, seq)
		}
	}
}
