package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
)

// warmServer is one server of TestWarmConnectionsSurviveALeaderLoss: an
// HTTP/2 TLS server that counts the connections it accepts and the health
// requests it answers, and grants renewals naming leader as the leader.
type warmServer struct {
	srv           *httptest.Server
	addr          string
	conns, health atomic.Int32
	leader        atomic.Pointer[string]
}

func startWarmServer(t *testing.T, like *httptest.Server) *warmServer {
	t.Helper()
	s := &warmServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		s.health.Add(1)
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("POST /v1/lease", func(w http.ResponseWriter, r *http.Request) {
		leader := s.leader.Load()
		if leader == nil {
			http.Error(w, `{"error":"no leader"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set(client.LeaderHeader, *leader)
		_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 3000, RenewMS: 50})
	})
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.EnableHTTP2 = true
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if like != nil {
		s.srv.TLS = like.TLS // the same test certificate, which the client trusts
	}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.addr = strings.TrimPrefix(s.srv.URL, "https://")
	return s
}

// A lease client WithWarmConnections holds a connection to each follower
// while it renews with the leader only, and keeps it past the transport's
// idle timeout; when the leader goes and a follower takes over, the
// renewals reach it, and the other survivor, on the connections made
// before: no new connection, so no handshake, at the failover.
func TestWarmConnectionsSurviveALeaderLoss(t *testing.T) {
	leader := startWarmServer(t, nil)
	next := startWarmServer(t, leader.srv)
	other := startWarmServer(t, leader.srv)
	for _, s := range []*warmServer{leader, next, other} {
		s.leader.Store(&leader.addr)
	}
	tr := leader.srv.Client().Transport.(*http.Transport).Clone()
	tr.IdleConnTimeout = 300 * time.Millisecond // three times the warming's period
	const every = 100 * time.Millisecond
	c, err := client.New([]string{leader.addr, next.addr, other.addr}, client.WithHTTPS(),
		client.WithHTTPClient(&http.Client{Transport: tr}), client.WithRetryFor(0),
		client.WithHedge(100*time.Millisecond), client.WithWarmConnections(every))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseLeaseStream()
	renew := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.RenewLease(ctx, client.LeaseRequest{Machine: "alpha"})
		return err
	}
	counts := func() string {
		return fmt.Sprintf("connections %d/%d/%d, health %d/%d/%d", leader.conns.Load(), next.conns.Load(), other.conns.Load(),
			leader.health.Load(), next.health.Load(), other.health.Load())
	}
	// Renewing with the leader, as a stub does, for well past the idle
	// timeout: several rounds of warming reach both followers.
	testwait.Until(t, 10*time.Second, "three rounds of warming reach each follower", func() (bool, string) {
		if err := renew(); err != nil {
			t.Fatalf("renew with the leader: %v", err)
		}
		return next.health.Load() >= 3 && other.health.Load() >= 3, counts()
	})
	if leader.health.Load() != 0 {
		t.Errorf("the leader was asked for its health %d times; the renewals keep its connection: %s", leader.health.Load(), counts())
	}
	if next.conns.Load() != 1 || other.conns.Load() != 1 || leader.conns.Load() != 1 {
		t.Fatalf("want one connection to each server, kept through the idle timeout: %s", counts())
	}

	// The leader dies; next is elected.
	leader.srv.CloseClientConnections()
	leader.srv.Close()
	next.leader.Store(&next.addr)
	other.leader.Store(&next.addr)
	for range 5 {
		if err := renew(); err != nil {
			t.Fatalf("renew after the leader died: %v (%s)", err, counts())
		}
	}
	if next.conns.Load() != 1 || other.conns.Load() != 1 {
		t.Errorf("the renewals after the leader died made new connections: %s; want the warm ones used", counts())
	}
}
