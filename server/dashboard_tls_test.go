package server_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
	"github.com/netmgr/netmgr/server/ui"
)

// TestDashboardSessionOverTLS runs a TLS server and a client with no
// certificate, as a browser is: the page's files need no credentials;
// POST /ui/login turns a token into the session cookie, which the API
// then takes as the token for reads and, with the page's header, for
// writes; a write by cookie without the header is refused (CSRF); the
// event stream needs the cookie and starts with this server's view of
// the election.
func TestDashboardSessionOverTLS(t *testing.T) {
	t.Parallel()
	s, certs, load := tlsServerWithAdmin(t)
	srvID, adminID := tlsServerID, tlsAdminID
	admin, err := client.New([]string{s.HTTPAddr()}, client.WithRetryFor(5*time.Second), client.WithTLS(load(certs[adminID])))
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the --database file loaded", func() bool {
		db, err := admin.Database(ctx(t))
		return err == nil && strings.Contains(db.Text, "admin_id tclark")
	})
	tok, err := admin.CreateToken(ctx(t), client.TokenRequest{User: "alice"})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Timeout: 10 * time.Second, Jar: jar,
		Transport: client.NewTLSTransport(load(pki.Files{CA: certs[srvID].CA}), pki.RoleServer)}
	base := "https://" + s.HTTPAddr()
	do := func(method, path, body string, page bool) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx(t), method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if page {
			req.Header.Set(ui.CSRFHeader, "1")
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data), resp.Header
	}

	if code, body, _ := do("GET", "/", "", false); code != http.StatusOK || !strings.Contains(body, "app.js") {
		t.Fatalf("GET / without credentials (redirected to /ui/): %d %.80s", code, body)
	}
	if code, body, _ := do("GET", "/nothing-here", "", false); code != http.StatusUnauthorized {
		t.Fatalf("GET /nothing-here without credentials: %d %.80s, want 401", code, body)
	}
	if code, body, _ := do("GET", "/v1/jobs", "", false); code != http.StatusUnauthorized || !strings.Contains(body, "token") {
		t.Fatalf("GET /v1/jobs before sign-in: %d %s, want 401 saying what to do", code, body)
	}
	if code, _, _ := do("GET", "/ui/events", "", false); code != http.StatusUnauthorized {
		t.Fatalf("GET /ui/events before sign-in: %d, want 401", code)
	}
	if code, body, _ := do("POST", "/ui/login", `{"token":"tk0000.forged"}`, true); code != http.StatusUnauthorized {
		t.Fatalf("sign in with a forged token: %d %s, want 401", code, body)
	}
	if code, body, _ := do("POST", "/ui/login", `{"token":"`+tok.Token+`"}`, true); code != http.StatusOK || !strings.Contains(body, `"user":"alice"`) {
		t.Fatalf("sign in: %d %s", code, body)
	}
	if code, body, _ := do("GET", "/ui/whoami", "", false); code != http.StatusOK || !strings.Contains(body, `"via":"dashboard, token `+tok.ID) {
		t.Fatalf("whoami: %d %s", code, body)
	}

	submit := `{"spec":{"binaries":{"*":"/bin/true"},"min":1,"name":"viacookie"}}`
	if code, body, _ := do("POST", "/v1/jobs", submit, false); code != http.StatusForbidden || !strings.Contains(body, ui.CSRFHeader) {
		t.Fatalf("submit by cookie without %s: %d %s, want 403", ui.CSRFHeader, code, body)
	}
	if code, body, _ := do("POST", "/v1/jobs/check", submit, true); code != http.StatusOK ||
		!strings.Contains(body, `binaries={*=/bin/true}`) || !strings.Contains(body, "unrunnable") {
		t.Fatalf("check: %d %s, want the spec string and why no machine can run it", code, body)
	}
	if code, body, _ := do("POST", "/v1/jobs", submit, true); code != http.StatusOK {
		t.Fatalf("submit by cookie: %d %s", code, body)
	}
	code, body, hdr := do("GET", "/v1/jobs?owner=alice&limit=1", "", false)
	if code != http.StatusOK || !strings.Contains(body, `"name":"viacookie"`) || hdr.Get(client.TotalCountHeader) != "1" {
		t.Fatalf("jobs of alice: %d %s (total %q)", code, body, hdr.Get(client.TotalCountHeader))
	}
	if code, body, _ := do("GET", "/v1/jobs?owner=bob&limit=1", "", false); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Fatalf("jobs of bob: %d %s, want none", code, body)
	}

	// The stream says hello, then replays what the hub holds: at least
	// this server's own election.
	req, _ := http.NewRequestWithContext(ctx(t), "GET", base+"/ui/events", nil)
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	var seen []string
	for !strings.Contains(strings.Join(seen, "\n"), "leader elected s0") {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read events: %v (read %q)", err, seen)
		}
		seen = append(seen, line)
	}
	resp.Body.Close()

	if code, _, _ := do("POST", "/ui/logout", "", true); code != http.StatusNoContent {
		t.Fatalf("sign out: %d", code)
	}
	u, _ := url.Parse(base)
	if cs := jar.Cookies(u); len(cs) != 0 {
		t.Errorf("cookies after sign-out: %v", cs)
	}
	if code, _, _ := do("GET", "/v1/jobs", "", false); code != http.StatusUnauthorized {
		t.Fatalf("GET /v1/jobs after sign-out: %d, want 401", code)
	}
}

// TestDashboardInsecure: without TLS the page names its user as the CLI
// does (X-Netmgr-User), and sign-in with a token is refused, saying why.
func TestDashboardInsecure(t *testing.T) {
	t.Parallel()
	_, tr := raft.NewInmemTransport("")
	s, err := server.New(server.Config{
		Name: "s0", HTTPAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", BootstrapExpect: 1,
		Logger: servertest.Logger(), RaftTransport: tr, InmemStore: true, TuneRaft: servertest.FastRaft,
	})
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	base := "http://" + s.HTTPAddr()
	req, _ := http.NewRequestWithContext(ctx(t), "GET", base+"/ui/whoami", nil)
	req.Header.Set(client.UserHeader, "bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"user":"bob"`) || !strings.Contains(string(data), `"insecure":true`) {
		t.Fatalf("whoami as bob: %d %s", resp.StatusCode, data)
	}
	req, _ = http.NewRequestWithContext(ctx(t), "POST", base+"/ui/login", strings.NewReader(`{"token":"x"}`))
	req.Header.Set(ui.CSRFHeader, "1")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(data), "without TLS") {
		t.Fatalf("token sign-in without TLS: %d %s, want 400 saying why", resp.StatusCode, data)
	}
}
