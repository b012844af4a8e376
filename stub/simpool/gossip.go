package simpool

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/memberlist"
	"golang.org/x/net/ipv4"

	"github.com/netmgr/netmgr/client"
)

// Gossip timing, as memberlist's DefaultLANConfig (which the servers run).
const (
	probeTimeout = 500 * time.Millisecond
	tcpTimeout   = 10 * time.Second
	udpBuffer    = 65536
)

// readPackets answers the gossip packets that reach the machine's own
// socket until it is killed.
func (m *Machine) readPackets() {
	buf := make([]byte, udpBuffer)
	for {
		n, from, err := m.udp.ReadFromUDP(buf)
		if err != nil {
			if m.dead.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		m.packet(buf[:n], from)
	}
}

// packet answers one gossip packet; the handlers keep nothing of buf
// past their return.
func (m *Machine) packet(buf []byte, from *net.UDPAddr) {
	if m.mute.Load() {
		m.dropped.Add(1)
		return
	}
	msg, err := m.pool.keys.unpacket(buf)
	if err != nil {
		m.log.Debug("gossip packet refused", "from", from, "err", err)
		return
	}
	m.handle(msg, from, 0)
}

// handle acts on one gossip message from from, as a memberlist member
// would, without a member list: it answers pings, relays indirect
// probes, refutes suspicion and death of itself, and learns servers from
// the alive messages it hears.
func (m *Machine) handle(msg []byte, from *net.UDPAddr, depth int) {
	if len(msg) < 1 || depth > 2 || m.dead.Load() {
		return
	}
	t, body := msgType(msg[0]), msg[1:]
	switch t {
	case compoundMsg:
		parts, err := compoundParts(body)
		if err != nil {
			m.log.Debug("gossip compound message", "from", from, "err", err)
			return
		}
		for _, part := range parts {
			m.handle(part, from, depth+1)
		}
	case compressMsg:
		plain, err := decompress(body)
		if err != nil {
			m.log.Debug("gossip compressed message", "from", from, "err", err)
			return
		}
		m.handle(plain, from, depth+1)
	case pingMsg:
		var p ping
		if decode(body, &p) != nil || (p.Node != "" && p.Node != m.name) {
			return
		}
		m.send(replyAddr(p.SourceAddr, p.SourcePort, from), encode(ackRespMsg, &ackResp{SeqNo: p.SeqNo}))
	case indirectPingMsg:
		var ind indirectPingReq
		if decode(body, &ind) == nil {
			m.probeFor(ind, from)
		}
	case ackRespMsg:
		var a ackResp
		if decode(body, &a) == nil {
			m.acked(a.SeqNo)
		}
	case suspectMsg:
		var s suspect
		switch {
		case decode(body, &s) != nil:
		case s.Node == m.name:
			m.refute(s.Incarnation, from)
		default:
			m.pool.relay(m, t, s.Node, s.Incarnation, msg, from)
		}
	case deadMsg:
		var d dead
		switch {
		case decode(body, &d) != nil:
		case d.Node == m.name && d.From != m.name:
			m.refute(d.Incarnation, from)
		case d.Node != m.name:
			m.pool.relay(m, t, d.Node, d.Incarnation, msg, from)
		}
	case aliveMsg:
		var a alive
		if decode(body, &a) != nil {
			return
		}
		if a.Node == m.name {
			m.mu.Lock()
			newer := a.Incarnation > m.incarnation
			m.mu.Unlock()
			if newer { // an older run of this machine, or a rumour: outbid it
				m.refute(a.Incarnation, from)
			}
			return
		}
		m.pool.learnServer(a.Node, a.Meta, false)
		m.pool.relay(m, t, a.Node, a.Incarnation, msg, from)
	case nackRespMsg, userMsg:
	default:
		m.log.Debug("gossip message type not handled", "type", t, "from", from)
	}
}

// replyAddr is where an answer goes: the source a message names, else
// where the packet came from.
func replyAddr(ip []byte, port uint16, from *net.UDPAddr) *net.UDPAddr {
	if len(ip) > 0 && port > 0 {
		return &net.UDPAddr{IP: net.IP(ip), Port: int(port)}
	}
	return from
}

// send sends msg to addr as one packet.
func (m *Machine) send(addr *net.UDPAddr, msg []byte) {
	if addr == nil || m.dead.Load() || m.mute.Load() {
		return
	}
	pkt, err := m.pool.keys.packet(msg)
	switch {
	case err != nil:
	case m.pool.shared != nil:
		// From the machine's own address, out of the shared socket.
		_, err = m.pool.shared.pc.WriteTo(pkt, &ipv4.ControlMessage{Src: m.gossipIP}, addr)
	default:
		_, err = m.udp.WriteToUDP(pkt, addr)
	}
	if err != nil && !m.dead.Load() {
		m.log.Debug("send gossip packet", "to", addr, "err", err)
	}
}

// probeFor pings ind's target for the member that asked, and forwards the
// ack, or a nack when none comes within the probe timeout and it asked for
// one, as memberlist's handleIndirectPing does.
func (m *Machine) probeFor(ind indirectPingReq, from *net.UDPAddr) {
	back := replyAddr(ind.SourceAddr, ind.SourcePort, from)
	acked := make(chan struct{})
	m.mu.Lock()
	m.seq++
	seq := m.seq
	if m.acks == nil {
		m.acks = make(map[uint32]func())
	}
	m.acks[seq] = func() { close(acked) }
	m.mu.Unlock()
	m.send(&net.UDPAddr{IP: net.IP(ind.Target), Port: int(ind.Port)},
		encode(pingMsg, &ping{SeqNo: seq, Node: ind.Node, SourceAddr: m.gossipIP, SourcePort: m.gossipPort, SourceNode: m.name}))
	m.pool.wg.Go(func() {
		t := time.NewTimer(probeTimeout)
		defer t.Stop()
		select {
		case <-acked:
			m.send(back, encode(ackRespMsg, &ackResp{SeqNo: ind.SeqNo}))
		case <-t.C:
			m.mu.Lock()
			delete(m.acks, seq)
			m.mu.Unlock()
			if ind.Nack {
				m.send(back, encode(nackRespMsg, &nackResp{SeqNo: ind.SeqNo}))
			}
		case <-m.ctx.Done():
		}
	})
}

// acked runs the handler waiting for the ack of seq.
func (m *Machine) acked(seq uint32) {
	m.mu.Lock()
	f := m.acks[seq]
	delete(m.acks, seq)
	m.mu.Unlock()
	if f != nil {
		f()
	}
}

// refute answers an accusation (suspect or dead at incarnation accused)
// as memberlist does, with an alive message of a higher incarnation: a
// member with a member list broadcasts it with its gossip; this one has
// none, so it sends it to the accuser and to the servers it knows.
func (m *Machine) refute(accused uint32, from *net.UDPAddr) {
	m.refuted.Add(1)
	m.mu.Lock()
	if accused >= m.incarnation {
		m.incarnation = accused + 1
	} else {
		m.incarnation++
	}
	st := m.selfLocked()
	m.mu.Unlock()
	m.log.Debug("refuting suspicion", "incarnation", st.Incarnation, "from", from)
	msg := encode(aliveMsg, &alive{Incarnation: st.Incarnation, Node: st.Name, Addr: st.Addr, Port: st.Port, Meta: st.Meta, Vsn: st.Vsn})
	m.send(from, msg)
	for _, a := range m.pool.joinUDP() {
		if from == nil || !a.IP.Equal(from.IP) || a.Port != from.Port {
			m.send(a, msg)
		}
	}
}

// acceptStreams serves the gossip TCP streams until the machine is killed.
func (m *Machine) acceptStreams() {
	for {
		c, err := m.tcp.Accept()
		if err != nil {
			if m.dead.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		m.serveStream(c)
	}
}

// serveStream answers gossip stream c in a goroutine of its own.
func (m *Machine) serveStream(c net.Conn) {
	if m.mute.Load() {
		_ = c.Close()
		return
	}
	m.pool.wg.Go(func() {
		defer c.Close()
		if err := m.stream(c); err != nil && !errors.Is(err, io.EOF) {
			m.log.Debug("gossip stream", "from", c.RemoteAddr(), "err", err)
		}
	})
}

// stream answers one gossip stream: a TCP ping (memberlist's fallback
// when UDP probes fail) or a push/pull, answered with the machine's own
// state alone.
func (m *Machine) stream(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(tcpTimeout))
	t, body, err := m.pool.keys.readStream(bufio.NewReader(c))
	if err != nil {
		return err
	}
	var out []byte
	switch t {
	case pingMsg:
		var p ping
		if err := decodeFrom(body, &p); err != nil {
			return err
		}
		if p.Node != "" && p.Node != m.name {
			return fmt.Errorf("TCP ping for %q", p.Node)
		}
		out = encode(ackRespMsg, &ackResp{SeqNo: p.SeqNo})
	case pushPullMsg:
		// A push/pull from a server that holds this machine failed (a
		// rejoin) is refuted as memberlist's mergeRemoteState does: a
		// higher incarnation, in the answer and in alive messages to the
		// servers. Unrefuted, the servers would keep it dead for good.
		accused, wronged := uint32(0), false
		hdr, err := remoteState(body, func(st pushNodeState) {
			if st.Name != m.name {
				m.pool.learnMember(st)
				return
			}
			if st.State != memberlist.StateAlive {
				accused, wronged = st.Incarnation, true
			}
		})
		if err != nil {
			return err
		}
		if wronged {
			m.refute(accused, nil)
		}
		m.mu.Lock()
		out = localState(m.selfLocked(), hdr.Join)
		m.mu.Unlock()
	default:
		return fmt.Errorf("gossip stream message type %d not handled", t)
	}
	if out, err = m.pool.keys.stream(out); err != nil {
		return err
	}
	_, err = c.Write(out)
	return err
}

// join joins the pool with a push/pull of the machine's own state (Join
// set) with one of the join addresses, chosen at random, the next one
// when it fails. memberlist's Join push/pulls with every address given:
// the servers each send their whole state to each stub that joins, which
// at 10,000 machines and 3 servers is 30,000 states of up to a megabyte,
// more than this box's servers get through in the time of a benchmark;
// the relay (below) brings the news of the join to the other servers.
// learn decodes the state the server sends back, to learn the servers
// from it; otherwise it is only read to its end (the server merges the
// machine's state after it has sent its own).
func (m *Machine) join(learn bool) error {
	join := m.pool.cfg.Join
	var errs []error
	for i, k := 0, rand.IntN(len(join)); i < len(join); i++ {
		addr := join[(k+i)%len(join)]
		err := m.pushPull(addr, learn)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return fmt.Errorf("join gossip pool: %w", errors.Join(errs...))
}

// keepJoining joins again every few seconds until a join works or the
// machine dies.
func (m *Machine) keepJoining() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(time.Duration(2+rand.IntN(3)) * time.Second):
		}
		if err := m.join(false); err == nil {
			return
		}
	}
}

func (m *Machine) pushPull(addr string, learn bool) error {
	d := net.Dialer{Timeout: tcpTimeout}
	if m.pool.shared != nil {
		// From the machine's own address, as its member is known by.
		d.LocalAddr = &net.TCPAddr{IP: m.gossipIP}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(tcpTimeout))
	m.mu.Lock()
	msg := localState(m.selfLocked(), true)
	m.mu.Unlock()
	if msg, err = m.pool.keys.stream(msg); err != nil {
		return err
	}
	if _, err := c.Write(msg); err != nil {
		return err
	}
	if !learn {
		// The server closes the stream once it has merged this state.
		_, err := io.Copy(io.Discard, c)
		return err
	}
	t, body, err := m.pool.keys.readStream(bufio.NewReader(c))
	if err != nil {
		return err
	}
	if t != pushPullMsg {
		return fmt.Errorf("join answered with message type %d", t)
	}
	if _, err := remoteState(body, m.pool.learnMember); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, c)
	return nil
}

// leave says the machine leaves, as a stub shutting down cleanly does:
// its metadata marks it leaving, then a dead message from itself (which
// memberlist reads as a leave) goes to the servers.
func (m *Machine) leave() {
	if m.dead.Load() {
		return
	}
	var meta client.NodeMeta
	_ = json.Unmarshal(m.meta, &meta)
	meta.Leaving = true
	raw, _ := json.Marshal(meta)
	m.mu.Lock()
	m.meta = raw
	m.incarnation++
	st := m.selfLocked()
	m.mu.Unlock()
	al := encode(aliveMsg, &alive{Incarnation: st.Incarnation, Node: st.Name, Addr: st.Addr, Port: st.Port, Meta: st.Meta, Vsn: st.Vsn})
	dd := encode(deadMsg, &dead{Incarnation: st.Incarnation, Node: st.Name, From: st.Name})
	for _, a := range m.pool.joinUDP() {
		m.send(a, al)
		m.send(a, dd)
	}
}

// decodeFrom reads one msgpack value from r into v, reading no further.
func decodeFrom(r io.Reader, v any) error {
	var h codec.MsgpackHandle
	return codec.NewDecoder(r, &h).Decode(v)
}

// learnMember takes a member of a pushed state: a server's metadata
// tells its API address.
func (p *Pool) learnMember(st pushNodeState) {
	p.learnServer(st.Name, st.Meta, false)
}

// joinUDP returns the UDP addresses of the join addresses and of the
// servers learned since.
func (p *Pool) joinUDP() []*net.UDPAddr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.udp == nil {
		for _, a := range p.cfg.Join {
			if ua, err := net.ResolveUDPAddr("udp", a); err == nil {
				p.udp = append(p.udp, ua)
			}
		}
	}
	return p.udp
}

// relayKeep is how long the pool remembers news it relayed.
const relayKeep = time.Minute

// relayKey names one piece of gossip news: a message type, the member it
// is about, and its incarnation.
type relayKey struct {
	t    msgType
	node string
	inc  uint32
}

// relay passes news about another member (alive, suspect, dead) that a
// machine heard on to the servers (the join addresses), once per news
// for the whole pool. In a real pool every member passes what it hears
// to random members, and news spreads to all in a few rounds; a
// simulated member keeps no list to pick from, and without the relay it
// would swallow what the servers gossip to it, leaving the servers'
// views to converge by chance. The pool's one hop to the servers stands
// in for the epidemic.
func (p *Pool) relay(via *Machine, t msgType, node string, inc uint32, msg []byte, from *net.UDPAddr) {
	k := relayKey{t, node, inc}
	now := time.Now()
	p.mu.Lock()
	if p.relayed == nil {
		p.relayed = make(map[relayKey]time.Time)
	}
	if _, seen := p.relayed[k]; seen {
		p.mu.Unlock()
		return
	}
	p.relayed[k] = now
	if now.Sub(p.pruned) > relayKeep {
		for k, at := range p.relayed {
			if now.Sub(at) > relayKeep {
				delete(p.relayed, k)
			}
		}
		p.pruned = now
	}
	p.mu.Unlock()
	for _, a := range p.joinUDP() {
		if from == nil || !a.IP.Equal(from.IP) || a.Port != from.Port {
			via.send(a, msg)
		}
	}
}
