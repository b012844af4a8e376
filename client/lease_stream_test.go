package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// A leader slower than the client's patience does not cost the stub its
// lease stream: the renewal it gave up on goes by a plain request, the
// stream owes that answer, and the next renewal reads it before its own,
// on the same stream. (The server here answers as the real one's handler
// does, only slowly on purpose; server's TestLeaseStream* speak to the
// real one.)
func TestLeaseStreamKeptThroughASlowAnswer(t *testing.T) {
	var plain, opened atomic.Int32
	var self string
	late := make(chan struct{}) // closed once the slow answer is sent
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/lease", func(w http.ResponseWriter, r *http.Request) {
		plain.Add(1)
		w.Header().Set(client.LeaderHeader, self)
		_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 3000, RenewMS: 500, Streams: true})
	})
	mux.HandleFunc("POST "+client.LeaseStreamPath, func(w http.ResponseWriter, r *http.Request) {
		opened.Add(1)
		conn, err := client.AcceptUpgradeTo(w, client.LeaseUpgrade)
		if err != nil {
			t.Errorf("lease stream upgrade: %v", err)
			return
		}
		defer conn.Close()
		in := bufio.NewScanner(conn)
		for n := int64(1); in.Scan(); n++ {
			if n == 1 {
				time.Sleep(700 * time.Millisecond) // past the client's 200 ms
			}
			_ = json.NewEncoder(conn).Encode(client.LeaseStreamAnswer{Status: http.StatusOK,
				Lease: &client.LeaseResponse{LeaseMS: 3000, RenewMS: n, Streams: true}})
			if n == 1 {
				close(late)
			}
		}
	})
	renew := streamLeader(t, mux, &self)

	renew() // plain: it names the leader, which takes streams
	renew() // on a new stream; slow, so plain again
	if p, o := plain.Load(), opened.Load(); p != 2 || o != 1 {
		t.Fatalf("after a slow answer: %d plain renewals, %d streams opened; want 2 and 1", p, o)
	}
	select {
	case <-late:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow answer was never sent")
	}
	if got := renew(); got.RenewMS != 2 {
		t.Errorf("the renewal after the slow one got answer %d on the stream, want 2 (the late answer 1 read first)", got.RenewMS)
	}
	if got := renew(); got.RenewMS != 3 {
		t.Errorf("the next renewal got answer %d, want 3", got.RenewMS)
	}
	if p, o := plain.Load(), opened.Load(); p != 2 || o != 1 {
		t.Errorf("at the end: %d plain renewals, %d streams opened; want 2 and 1 (the stream kept)", p, o)
	}
}

// A leader that hangs (cut off, or stuck): the first renewal on its
// stream is slow, and the plain request after it waits on the leader
// too (a slow leader is not sent every stub's forwarded renewal), so
// that round fails. The next finds the answer owed has not come, drops
// the stream, and asks the other servers first, whose answer comes
// within the renewal's time.
func TestLeaseStreamHungLeaderFallsBackToTheOthers(t *testing.T) {
	var hang atomic.Bool
	var leaderAddr string
	var viaFollower atomic.Int32
	leader := http.NewServeMux()
	leader.HandleFunc("POST /v1/lease", func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			<-r.Context().Done()
			return
		}
		w.Header().Set(client.LeaderHeader, leaderAddr)
		_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 3000, RenewMS: 500, Streams: true})
	})
	leader.HandleFunc("POST "+client.LeaseStreamPath, func(w http.ResponseWriter, r *http.Request) {
		conn, err := client.AcceptUpgradeTo(w, client.LeaseUpgrade)
		if err != nil {
			t.Errorf("lease stream upgrade: %v", err)
			return
		}
		defer conn.Close()
		_, _ = io.Copy(io.Discard, conn) // answers nothing, until the client closes
	})
	follower := http.NewServeMux()
	follower.HandleFunc("POST /v1/lease", func(w http.ResponseWriter, r *http.Request) {
		viaFollower.Add(1)
		w.Header().Set(client.LeaderHeader, leaderAddr)
		_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 3000, RenewMS: 500, Streams: true})
	})
	ls := httptest.NewUnstartedServer(leader)
	ls.EnableHTTP2 = true
	ls.StartTLS()
	defer ls.Close()
	fs := httptest.NewUnstartedServer(follower)
	fs.EnableHTTP2 = true
	fs.TLS = ls.TLS // the same test certificate, which ls's client trusts
	fs.StartTLS()
	defer fs.Close()
	leaderAddr = strings.TrimPrefix(ls.URL, "https://")

	c, err := client.New([]string{leaderAddr, strings.TrimPrefix(fs.URL, "https://")}, client.WithHTTPS(),
		client.WithHTTPClient(ls.Client()), client.WithRetryFor(0), client.WithHedge(100*time.Millisecond),
		client.WithLeaderPatience(400*time.Millisecond), client.WithLeaseStream())
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseLeaseStream()
	// Each renewal has 700 ms: 400 on the stream, then the rest. Asking
	// the hung leader first would take 400 more.
	renew := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		if _, err := c.RenewLease(ctx, client.LeaseRequest{Machine: "alpha"}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	renew("the first renewal, plain, at the leader")
	hang.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	if _, err := c.RenewLease(ctx, client.LeaseRequest{Machine: "alpha"}); err == nil {
		t.Log("the first renewal on the hung leader's stream was answered, by the follower's hedge")
	}
	cancel()
	renew("the next, the stream owing an answer")
	renew("the next, by plain requests")
	if got := viaFollower.Load(); got < 2 {
		t.Errorf("the follower answered %d renewals, want at least 2", got)
	}
}

// A leader slow to open a stream (a handshake on a server starved of
// CPU) does not have its opening given up on: the renewal that began it
// goes by a plain request after its patience, the opening goes on, and
// the stream, once open, carries a later renewal. One stream is opened
// in all; before, each renewal's patience ended its opening mid-way and
// the next tried again, the server doing each for nothing.
func TestLeaseStreamSlowToOpenIsKeptForTheNextRenewal(t *testing.T) {
	var plain, opened atomic.Int32
	var self string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/lease", func(w http.ResponseWriter, r *http.Request) {
		plain.Add(1)
		w.Header().Set(client.LeaderHeader, self)
		_ = json.NewEncoder(w).Encode(client.LeaseResponse{LeaseMS: 3000, RenewMS: 500, Streams: true})
	})
	mux.HandleFunc("POST "+client.LeaseStreamPath, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond) // past the client's 200 ms
		opened.Add(1)
		conn, err := client.AcceptUpgradeTo(w, client.LeaseUpgrade)
		if err != nil {
			t.Errorf("lease stream upgrade: %v", err)
			return
		}
		defer conn.Close()
		in := bufio.NewScanner(conn)
		for n := int64(1); in.Scan(); n++ {
			_ = json.NewEncoder(conn).Encode(client.LeaseStreamAnswer{Status: http.StatusOK,
				Lease: &client.LeaseResponse{LeaseMS: 3000, RenewMS: n, Streams: true}})
		}
	})
	renew := streamLeader(t, mux, &self)

	renew() // plain: it names the leader, which takes streams
	if got := renew(); got.RenewMS != 500 {
		t.Fatalf("the renewal that began the opening got %d ms, want the plain answer's 500", got.RenewMS)
	}
	// Renewals every 0.1 s, plain while the stream opens, until one goes
	// on it (its answers count from 1).
	deadline := time.Now().Add(5 * time.Second)
	for renew().RenewMS == 500 {
		if time.Now().After(deadline) {
			t.Fatalf("no renewal on the stream 5 s after its opening began; %d streams opened", opened.Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := renew(); got.RenewMS != 2 {
		t.Errorf("the next renewal got answer %d, want 2 on the same stream", got.RenewMS)
	}
	if o := opened.Load(); o != 1 {
		t.Errorf("%d streams opened, want 1 (the slow one, kept)", o)
	}
}

// streamLeader serves mux over TLS with HTTP/2 as the one server, setting
// *self to its address (which its handlers name as the leader), and
// returns a renewal by a client that takes lease streams, with a 200 ms
// patience and a second for each renewal.
func streamLeader(t *testing.T, mux *http.ServeMux, self *string) func() client.LeaseResponse {
	t.Helper()
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	*self = strings.TrimPrefix(srv.URL, "https://")
	c, err := client.New([]string{*self}, client.WithHTTPS(), client.WithHTTPClient(srv.Client()), client.WithRetryFor(0),
		client.WithHedge(100*time.Millisecond), client.WithLeaderPatience(200*time.Millisecond), client.WithLeaseStream())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseLeaseStream)
	return func() client.LeaseResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.RenewLease(ctx, client.LeaseRequest{Machine: "alpha"})
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
		return resp
	}
}
