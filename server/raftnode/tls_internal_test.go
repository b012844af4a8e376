package raftnode

import (
	"context"
	"crypto/tls"
	"errors"
	"github.com/netmgr/netmgr/internal/testwait"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client/pki"
)

// The TLS stream layer hands Raft only connections from servers of the
// cluster CA: a stub's certificate, no certificate, a server certificate
// of another CA and plaintext are refused and logged with the peer's
// address; a server of the CA gets through.
func TestTLSStreamLayerRefusesAllButServers(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"), serverID("s1"), stubID("m1"))
	foreign := newTLSPKI(t, serverID("s1"))
	rec := new(logRecorder)
	var counted atomic.Int64
	l, err := newTLSStreamLayer("127.0.0.1:0", nil, p.material(serverID("s0")), rec.logger(), func() { counted.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := l.Addr().String()

	// cert returns the certificate of id from a PKI, for dialers that
	// skip checking the listener so that the listener alone decides.
	cert := func(p *tlsPKI, id pki.Identity) []tls.Certificate {
		c, err := tls.LoadX509KeyPair(p.files[id].Cert, p.files[id].Key)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	refusals := []struct {
		name  string
		certs []tls.Certificate // nil: no certificate
		plain bool
	}{
		{name: "stub certificate", certs: cert(p, stubID("m1"))},
		{name: "no certificate"},
		{name: "server certificate of another CA", certs: cert(foreign, serverID("s1"))},
		{name: "plaintext", plain: true},
	}
	for i, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			var c net.Conn
			if tt.plain {
				c, err = net.Dial("tcp", addr)
				if err == nil {
					_, err = c.Write([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) // a plain Raft RPC's first bytes
				}
			} else {
				c, err = tls.Dial("tcp", addr, &tls.Config{
					MinVersion:         tls.VersionTLS13,
					InsecureSkipVerify: true, //nolint:gosec // the listener is under test, not the dialer
					Certificates:       tt.certs,
				})
			}
			if err == nil {
				// TLS 1.3 tells a client of its refused certificate on
				// its first read; a refused connection is closed.
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, err = c.Read(make([]byte, 1))
				c.Close()
			}
			if err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
				t.Fatalf("got read error %v, want the connection refused", err)
			}
			testwait.For(t, 10*time.Second, "the refusal to be counted", func() bool { return l.refused.Load() == int64(i+1) })
		})
	}
	// Every refusal came from the loopback address: the first is logged,
	// with why, and the rest are counted for the next line.
	logged := rec.matching("WARN refused raft connection", "peer=127.0.0.1:", "why=")
	if len(logged) != 1 || !strings.Contains(logged[0], "wrong certificate role") {
		t.Fatalf("got refusal log %q, want one line naming the stub's wrong role", logged)
	}

	good, err := tls.Dial("tcp", addr, p.material(serverID("s1")).ClientConfig(pki.RoleServer))
	if err != nil {
		t.Fatalf("dial as a server: %v", err)
	}
	defer good.Close()
	select {
	case c := <-accepted:
		defer c.Close()
		if c.RemoteAddr().String() != good.LocalAddr().String() {
			t.Fatalf("accepted %v, want the server's connection from %v", c.RemoteAddr(), good.LocalAddr())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's connection was not accepted")
	}
	select {
	case c := <-accepted:
		t.Fatalf("a refused connection from %v reached Raft", c.RemoteAddr())
	default:
	}
	if n := l.refused.Load(); n != int64(len(refusals)) || counted.Load() != n {
		t.Fatalf("refused %d connections and reported %d, want %d", n, counted.Load(), len(refusals))
	}
}

// A server over TLS Raft cannot reach a peer whose Raft is plaintext,
// nor one whose Raft certificate is not a server's.
func TestTLSStreamLayerDialsOnlyServers(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"), stubID("m1"))
	l, err := newTLSStreamLayer("127.0.0.1:0", nil, p.material(serverID("s0")), new(logRecorder).logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	stub := stubListener(t, p)
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	for _, tt := range []struct {
		name, addr, want string
	}{
		{"stub certificate", stub, "wrong certificate role"},
		{"plaintext raft", string(plain.LocalAddr()), "dial raft at"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := l.Dial(raft.ServerAddress(tt.addr), 5*time.Second)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestTLSStreamLayerNeedsAnAdvertisableAddress(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"))
	_, err := newTLSStreamLayer("0.0.0.0:0", nil, p.material(serverID("s0")), new(logRecorder).logger(), nil)
	if !errors.Is(err, errNotAdvertisable) {
		t.Fatalf("bind 0.0.0.0 without advertise: got %v, want errNotAdvertisable", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
