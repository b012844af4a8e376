package stub

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// TestPeerListKeepsConnectionsAcrossUpdates checks that a peer seen again
// at the same address (a gossip metadata update) is asked over the same
// connection, and that a new address gets a new client.
func TestPeerListKeepsConnectionsAcrossUpdates(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(client.OutageStatement{Machine: "flute"})
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	l := newPeerList(nil)
	ask := func() {
		t.Helper()
		ps := l.sorted()
		if len(ps) != 1 {
			t.Fatalf("got %d peers, want 1", len(ps))
		}
		if _, err := ps[0].c.OutageStatement(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		l.set("flute", addr)
		ask()
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("three updates at the same address: got %d connections, want 1", got)
	}

	before := l.sorted()[0].c
	l.set("flute", "127.0.0.1:1")
	if l.sorted()[0].c == before {
		t.Errorf("a new address kept the old client")
	}
	l.set("flute", "")
	if got := len(l.sorted()); got != 0 {
		t.Errorf("after removal: got %d peers, want 0", got)
	}
}
