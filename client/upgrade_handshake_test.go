package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// watchedConn counts the HandshakeEnded calls DialUpgradeTo makes, and
// what the server had served by then.
type watchedConn struct {
	net.Conn
	ended        *atomic.Int32
	servedBefore *atomic.Int32
	served       *atomic.Int32
}

func (c *watchedConn) HandshakeEnded() {
	c.ended.Add(1)
	c.servedBefore.Store(c.served.Load())
}

// DialUpgradeTo tells a HandshakeWatcher that its TLS handshake ended,
// once, before the upgrade request goes out, whether the handshake
// succeeded or not.
func TestDialUpgradeToTellsTheConnectionItsHandshakeEnded(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		conn, err := client.AcceptUpgradeTo(w, client.LeaseUpgrade)
		if err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	plain := httptest.NewServer(http.NotFoundHandler()) // no TLS: the handshake fails
	defer plain.Close()

	for _, tc := range []struct {
		name, url string
		ok        bool
	}{{"handshake done", srv.URL, true}, {"handshake failed", "https" + plain.URL[len("http"):], false}} {
		t.Run(tc.name, func(t *testing.T) {
			var ended, servedBefore atomic.Int32
			servedBefore.Store(-1)
			tr := srv.Client().Transport.(*http.Transport).Clone()
			var d net.Dialer
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				raw, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &watchedConn{Conn: raw, ended: &ended, servedBefore: &servedBefore, served: &served}, nil
			}
			before := served.Load()
			conn, err := client.DialUpgradeTo(context.Background(), tr, http.MethodPost, tc.url+"/up", nil, nil, client.LeaseUpgrade)
			if (err == nil) != tc.ok {
				t.Fatalf("DialUpgradeTo: %v, want success %v", err, tc.ok)
			}
			if conn != nil {
				conn.Close()
			}
			if n := ended.Load(); n != 1 {
				t.Fatalf("HandshakeEnded called %d times, want 1", n)
			}
			if got := servedBefore.Load(); got != before {
				t.Errorf("the server had served %d requests when the handshake ended, want %d (none of this dial's)", got, before)
			}
		})
	}
}
