package simpool

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"golang.org/x/net/ipv4"
)

// shared are the sockets every machine of a pool shares when each has an
// address of its own (Config.Shared): one API listener, one gossip
// listener and one gossip UDP socket, bound to every address on their
// ports, which hand each connection and packet to the machine whose
// address it was sent to. A process holds few open files then, whatever
// the number of machines: 10,000 machines with sockets of their own
// would need 30,000, and a container's limit is often 20,000.
type shared struct {
	api, tcp net.Listener
	udp      *net.UDPConn
	pc       *ipv4.PacketConn // udp, with each packet's destination
	// byIP finds a machine by its address (the IPv4 in 4 bytes).
	byIP map[[4]byte]*Machine
}

// openShared binds the shared sockets on httpPort and gossipPort (0
// picks a port, the same for TCP and UDP gossip).
func openShared(httpPort, gossipPort int) (*shared, error) {
	s := &shared{byIP: make(map[[4]byte]*Machine)}
	var err error
	if s.api, err = listen(net.JoinHostPort("0.0.0.0", strconv.Itoa(httpPort))); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		if s.tcp, err = listen(net.JoinHostPort("0.0.0.0", strconv.Itoa(gossipPort))); err != nil {
			s.close()
			return nil, err
		}
		port := s.tcp.Addr().(*net.TCPAddr).Port
		if s.udp, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero, Port: port}); err == nil {
			break
		}
		_ = s.tcp.Close()
		s.tcp = nil
		if gossipPort != 0 || try == 9 {
			s.close()
			return nil, fmt.Errorf("gossip UDP on port %d: %w", port, err)
		}
	}
	s.pc = ipv4.NewPacketConn(s.udp)
	if err := s.pc.SetControlMessage(ipv4.FlagDst, true); err != nil {
		s.close()
		return nil, fmt.Errorf("gossip UDP: read destinations: %w", err)
	}
	return s, nil
}

func (s *shared) close() {
	for _, c := range []io.Closer{s.api, s.tcp} {
		if c != nil {
			_ = c.Close()
		}
	}
	if s.udp != nil {
		_ = s.udp.Close()
	}
}

// ports returns the API and gossip ports.
func (s *shared) ports() (httpPort, gossipPort int) {
	return s.api.Addr().(*net.TCPAddr).Port, s.tcp.Addr().(*net.TCPAddr).Port
}

// machine returns the live machine at address a, or nil.
func (s *shared) machine(a net.Addr) *Machine {
	var ip net.IP
	switch v := a.(type) {
	case *net.TCPAddr:
		ip = v.IP
	case *net.UDPAddr:
		ip = v.IP
	}
	return s.machineAt(ip)
}

func (s *shared) machineAt(ip net.IP) *Machine {
	ip4 := ip.To4()
	if ip4 == nil {
		return nil
	}
	m := s.byIP[[4]byte(ip4)]
	if m == nil || m.dead.Load() {
		return nil
	}
	return m
}

// serveShared starts the shared sockets' loops.
func (p *Pool) serveShared() {
	s := p.shared
	var ln net.Listener = &sharedListener{s: s}
	if p.cfg.TLS != nil {
		// Each machine's own certificate, by the connection it reached.
		ln = tls.NewListener(ln, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			mc, ok := h.Conn.(*machineConn)
			if !ok || mc.m.tlsConfig == nil {
				return nil, errors.New("connection reached no simulated machine with TLS")
			}
			// pki's configuration picks its certificate per handshake.
			if get := mc.m.tlsConfig.GetConfigForClient; get != nil {
				return get(h)
			}
			return mc.m.tlsConfig, nil
		}})
	}
	p.wg.Go(func() { _ = p.srv.Serve(ln) })
	p.wg.Go(func() {
		for {
			c, err := s.tcp.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			m := s.machine(c.LocalAddr())
			if m == nil {
				_ = c.Close()
				continue
			}
			m.serveStream(c)
		}
	})
	p.wg.Go(func() {
		buf := make([]byte, udpBuffer)
		for {
			n, cm, from, err := s.pc.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			ua, _ := from.(*net.UDPAddr)
			if cm == nil || ua == nil {
				continue
			}
			if m := s.machineAt(cm.Dst); m != nil {
				m.packet(buf[:n], ua)
			}
		}
	})
}

// sharedListener hands out the shared API listener's connections, each
// marked with the machine it reached; those that reached none are closed.
type sharedListener struct{ s *shared }

func (l *sharedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.s.api.Accept()
		if err != nil {
			return nil, err
		}
		m := l.s.machine(c.LocalAddr())
		if m == nil {
			_ = c.Close()
			continue
		}
		if mc := m.track(c); mc != nil {
			return mc, nil
		}
	}
}

func (l *sharedListener) Close() error   { return l.s.api.Close() }
func (l *sharedListener) Addr() net.Addr { return l.s.api.Addr() }
