package server

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// handshakeServer serves "ok" over HTTP/2 on a handshakeListener with a
// test certificate; it returns the listener, its URL and a client that
// trusts the certificate and dials anew for every request.
func handshakeServer(t *testing.T, edit func(cfg *tls.Config)) (*handshakeListener, string, func() *http.Client) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	cfg := ts.TLS.Clone()
	base := ts.Client().Transport.(*http.Transport)
	ts.Close()
	if edit != nil {
		edit(cfg)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newHandshakeListener(raw, cfg, slog.New(slog.DiscardHandler))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	fresh := func() *http.Client {
		tr := base.Clone()
		tr.ForceAttemptHTTP2 = true
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	return ln, "https://" + raw.Addr().String() + "/", fresh
}

// get asks url with hc and returns the protocol the server saw.
func get(t *testing.T, hc *http.Client, url string) string {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// Many clients connecting at once are all served, over HTTP/2, and no
// more handshakes run at once than there are slots.
func TestHandshakeListenerBoundsConcurrentHandshakes(t *testing.T) {
	var running, most atomic.Int32
	ln, url, fresh := handshakeServer(t, func(cfg *tls.Config) {
		cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			return nil, nil
		}
		cfg.VerifyConnection = func(tls.ConnectionState) error { running.Add(-1); return nil }
	})
	ln.hold = time.Minute // the slots alone bound them here, however slow the box
	var wg sync.WaitGroup
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if proto := get(t, fresh(), url); proto != "HTTP/2.0" {
				t.Errorf("served over %s, want HTTP/2.0", proto)
			}
		}()
	}
	wg.Wait()
	if m := int(most.Load()); m > cap(ln.slots) || m < 1 {
		t.Errorf("at most %d handshakes ran at once, want 1 to %d (the slots)", m, cap(ln.slots))
	}
}

// Connections that send nothing take no slot, and one that stalls
// mid-handshake keeps its slot no longer than the hold: with more of
// each than there are slots, a client is still served.
func TestHandshakeListenerSilentAndStalledClients(t *testing.T) {
	ln, url, fresh := handshakeServer(t, nil)
	addr := ln.Addr().String()
	for range cap(ln.slots) + 2 {
		silent, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		stalled, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer stalled.Close()
		// A TLS record header and part of a ClientHello, then nothing.
		if _, err := stalled.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := fresh().Do(req)
	if err != nil {
		t.Fatalf("a client behind %d silent and %d stalled connections: %v", cap(ln.slots)+2, cap(ln.slots)+2, err)
	}
	resp.Body.Close()
}
