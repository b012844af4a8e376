package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// One hub feeds every stream: each sees every event published, in order,
// and a stream that reconnects with its Last-Event-ID gets only what it
// missed.
func TestHubFansOutToEveryStream(t *testing.T) {
	h := NewHub("s1")
	srv := httptest.NewServer(h)
	defer srv.Close()
	const streams = 20
	readers := make([]*bufio.Reader, streams)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range readers {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		readers[i] = bufio.NewReader(resp.Body)
		if got := nextData(t, readers[i]); !strings.Contains(got, `"server":"s1"`) {
			t.Fatalf("first message %q, want the hello", got)
		}
	}
	testwait.For(t, 10*time.Second, "every stream subscribed", func() bool { return h.Subscribers() >= streams })
	for i := 1; i <= 3; i++ {
		h.Publish(Event{Key: fmt.Sprintf("k%d", i), Kind: "test", Text: fmt.Sprintf("event %d", i)})
	}
	for i, r := range readers {
		for want := 1; want <= 3; want++ {
			if got := nextData(t, r); !strings.Contains(got, fmt.Sprintf(`"text":"event %d"`, want)) {
				t.Fatalf("stream %d: got %q, want event %d", i, got, want)
			}
		}
	}

	// Reconnecting with the id of event 2 replays only event 3; an id
	// from another hub replays everything.
	for _, c := range []struct {
		last string
		want []string
	}{
		{h.epoch + ":2", []string{"event 3"}},
		{"otherhub:2", []string{"event 1", "event 2", "event 3"}},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		req.Header.Set("Last-Event-ID", c.last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		nextData(t, r) // hello
		for _, w := range c.want {
			if got := nextData(t, r); !strings.Contains(got, w) {
				t.Errorf("Last-Event-ID %s: got %q, want %q", c.last, got, w)
			}
		}
		resp.Body.Close()
	}
}

// nextData returns the data line of the next event of an SSE stream.
func nextData(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read stream: %v", err)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return strings.TrimSpace(d)
		}
	}
}

// The ring keeps the last RingSize events.
func TestHubRingKeepsTheRecent(t *testing.T) {
	h := NewHub("s1")
	for i := range RingSize + 10 {
		h.Publish(Event{Text: fmt.Sprint(i)})
	}
	evs := h.Recent()
	if len(evs) != RingSize || evs[0].Text != "10" || evs[len(evs)-1].Seq != RingSize+10 {
		t.Fatalf("ring holds %d events from %q to seq %d", len(evs), evs[0].Text, evs[len(evs)-1].Seq)
	}
}

// Sign-in checks the token, sets an HttpOnly, Secure, SameSite=Strict
// cookie, and refuses a request without the page's header or with a bad
// token, saying what to do.
func TestLogin(t *testing.T) {
	s := &Sessions{Secure: true, Verify: func(tok string) (string, error) {
		if tok == "good" {
			return "alice", nil
		}
		return "", errors.New("token not known")
	}}
	post := func(body string, header bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(body))
		if header {
			req.Header.Set(CSRFHeader, "1")
		}
		w := httptest.NewRecorder()
		s.Login(w, req)
		return w
	}
	if w := post(`{"token":"good"}`, false); w.Code != http.StatusForbidden {
		t.Errorf("without %s: %d, want 403", CSRFHeader, w.Code)
	}
	w := post(`{"token":"bad"}`, true)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "netmgr token create") {
		t.Errorf("bad token: %d %s, want 401 saying how to get one", w.Code, w.Body)
	}
	w = post(`{"token":" good "}`, true)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"user":"alice"`) {
		t.Fatalf("good token: %d %s", w.Code, w.Body)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 || cs[0].Name != Cookie || cs[0].Value != "good" || !cs[0].HttpOnly || !cs[0].Secure || cs[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v, want %s=good HttpOnly Secure SameSite=Strict", cs, Cookie)
	}

	req := httptest.NewRequest(http.MethodPost, "/ui/logout", nil)
	req.Header.Set(CSRFHeader, "1")
	rec := httptest.NewRecorder()
	s.Logout(rec, req)
	if cs := rec.Result().Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Errorf("sign-out cookie %+v, want it cleared", cs)
	}
}

// CORS lets the group's own pages in, answers their preflights, and
// leaves every other origin without the headers a browser needs.
func TestCORS(t *testing.T) {
	peers := func() []string { return []string{"127.0.0.1:9001", "127.0.0.1:9002"} }
	h := CORS(peers, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, c := range []struct {
		origin, method string
		preflight      bool
		allow          bool
		status         int
	}{
		{"https://127.0.0.1:9002", http.MethodGet, false, true, http.StatusTeapot},
		{"https://127.0.0.1:9002", http.MethodOptions, true, true, http.StatusNoContent},
		{"https://evil.example", http.MethodGet, false, false, http.StatusTeapot},
		{"https://evil.example", http.MethodOptions, true, false, http.StatusTeapot},
		{"null", http.MethodGet, false, false, http.StatusTeapot},
	} {
		req := httptest.NewRequest(c.method, "https://127.0.0.1:9001/v1/jobs", nil)
		req.Header.Set("Origin", c.origin)
		if c.preflight {
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got := w.Header().Get("Access-Control-Allow-Origin")
		if (got == c.origin) != c.allow || w.Code != c.status {
			t.Errorf("%s %s from %s: status %d, allow-origin %q; want status %d, allowed %v", c.method, req.URL.Path, c.origin, w.Code, got, c.status, c.allow)
		}
		if c.allow && c.preflight && !strings.Contains(w.Header().Get("Access-Control-Allow-Headers"), CSRFHeader) {
			t.Errorf("preflight does not allow %s", CSRFHeader)
		}
	}
}

// The page's files are served with headers that keep them to themselves.
func TestStatic(t *testing.T) {
	for _, path := range []string{"/ui/", "/ui/app.js", "/ui/app.css"} {
		w := httptest.NewRecorder()
		Static().ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("GET %s: %d, %d bytes", path, w.Code, w.Body.Len())
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
}

// Events published while no stream is open are kept without their
// frames; a stream that connects after the ring has wrapped gets the ones
// after its Last-Event-ID, in order, encoded then.
func TestHubReplaysAWrappedRingToALateStream(t *testing.T) {
	h := NewHub("s1")
	const total = RingSize + 10
	for i := 1; i <= total; i++ {
		h.Publish(Event{Kind: "test", Text: fmt.Sprintf("event %d", i)})
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before srv.Close: the streams end with it
	for _, c := range []struct {
		after, first, count int
	}{
		{total - 5, total - 4, 5},           // within the ring: only what it missed
		{3, total - RingSize + 1, RingSize}, // older than the ring: all it holds
	} {
		r := openStreamAfter(t, ctx, srv.URL, fmt.Sprintf("%s:%d", h.epoch, c.after))
		for i := range c.count {
			seq := c.first + i
			if got := nextData(t, r); !strings.Contains(got, fmt.Sprintf(`"seq":%d,`, seq)) || !strings.Contains(got, fmt.Sprintf(`"text":"event %d"`, seq)) {
				t.Fatalf("after %d: event %d is %q", c.after, i, got)
			}
		}
	}
	// Up to date: the first event the stream sends is the next one.
	r := openStreamAfter(t, ctx, srv.URL, fmt.Sprintf("%s:%d", h.epoch, total))
	h.Publish(Event{Kind: "test", Text: "next"})
	if got := nextData(t, r); !strings.Contains(got, fmt.Sprintf(`"seq":%d,`, total+1)) {
		t.Fatalf("up to date: got %q, want the next event", got)
	}
}

// openStreamAfter opens the hub's stream at url as a page reconnecting
// with Last-Event-ID last, reads its hello, and returns the stream; it is
// closed at the end of the test, and ends with ctx.
func openStreamAfter(t *testing.T, ctx context.Context, url, last string) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Last-Event-ID", last)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	r := bufio.NewReader(resp.Body)
	nextData(t, r) // hello
	return r
}
