package tlsgate_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/internal/tlsgate"
)

// selfSigned is a server configuration with a fresh P-256 certificate.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

func clientConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true} //nolint:gosec // a test's own server
}

func listen(t *testing.T, config *tls.Config, atOnce int, onError func(net.Addr, error)) *tlsgate.Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := tlsgate.NewAtOnce(inner, config, atOnce, onError)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAcceptGivesAHandshakenConnection(t *testing.T) {
	l := listen(t, selfSigned(t), 2, nil)
	go func() {
		c, err := tls.Dial("tcp", l.Addr().String(), clientConfig())
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("ping"))
		_, _ = io.ReadFull(c, make([]byte, 4))
	}()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc, ok := c.(*tls.Conn)
	if !ok {
		t.Fatalf("Accept gave a %T, want *tls.Conn", c)
	}
	if !tc.ConnectionState().HandshakeComplete {
		t.Fatal("Accept gave a connection whose handshake is not done")
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(tc, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v; want ping", buf, err)
	}
	if _, err := tc.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
}

// TestNoMoreHandshakesAtOnceThanAllowed holds every handshake in the
// server's certificate callback and lets them go one at a time: with two
// allowed, no more than two are ever in the callback, and all five clients
// are served.
func TestNoMoreHandshakesAtOnceThanAllowed(t *testing.T) {
	const clients, atOnce = 5, 2
	config := selfSigned(t)
	var in, most atomic.Int32
	release := make(chan struct{})
	config.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		n := in.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		in.Add(-1)
		return nil, nil
	}
	l := listen(t, config, atOnce, func(_ net.Addr, err error) { t.Errorf("handshake failed: %v", err) })

	var dialled sync.WaitGroup
	for range clients {
		dialled.Add(1)
		go func() {
			defer dialled.Done()
			c, err := tls.Dial("tcp", l.Addr().String(), clientConfig())
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, c) // until the server closes
			c.Close()
		}()
	}
	for left := clients; left > 0; left-- {
		testwait.For(t, 10*time.Second, "handshakes in the callback", func() bool { return int(in.Load()) == min(left, atOnce) })
		release <- struct{}{}
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	dialled.Wait()
	if got := most.Load(); got != atOnce {
		t.Fatalf("at most %d handshakes at once, want %d", got, atOnce)
	}
}

// TestAClientThatLeftIsNotAnswered: while the one slot is taken, a
// client sends its ClientHello and gives up; when its turn comes it gets
// no key exchange (the certificate callback is never asked for it) and
// the error says why.
func TestAClientThatLeftIsNotAnswered(t *testing.T) {
	config := selfSigned(t)
	var asked atomic.Int32
	release := make(chan struct{})
	config.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if asked.Add(1) == 1 {
			<-release
		}
		return nil, nil
	}
	failed := make(chan error, 1)
	l := listen(t, config, 1, func(_ net.Addr, err error) { failed <- err })

	go func() { // the first client, holding the slot
		c, err := tls.Dial("tcp", l.Addr().String(), clientConfig())
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	testwait.For(t, 10*time.Second, "the first handshake in the callback", func() bool { return asked.Load() == 1 })

	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// The ClientHello goes out at once; the context's end closes raw.
	if err := tls.Client(raw, clientConfig()).HandshakeContext(ctx); err == nil {
		t.Fatal("the second client's handshake succeeded while the slot was taken")
	}
	raw.Close()

	release <- struct{}{}
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	select {
	case err := <-failed:
		if !errors.Is(err, tlsgate.ErrClientGone) {
			t.Fatalf("the second handshake failed with %v, want ErrClientGone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no error reported for the client that left")
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the certificate callback was asked %d times, want 1", n)
	}
}

func TestCloseEndsAcceptAndWaitingHandshakes(t *testing.T) {
	l := listen(t, selfSigned(t), 1, nil)
	silent, err := net.Dial("tcp", l.Addr().String()) // takes the slot, says nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	waiting, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()

	accepted := make(chan error, 1)
	go func() { _, err := l.Accept(); accepted <- err }()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	// Both are closed by the server: their reads end.
	for name, c := range map[string]net.Conn{"in its handshake": silent, "waiting its turn": waiting} {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection %s was not closed by Close: %v", name, err)
		}
	}
}
