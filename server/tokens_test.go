package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// eventDetails returns "kind: detail" of every event of the given kinds
// after index.
func eventDetails(t *testing.T, cl *client.Client, after uint64, kinds ...string) []string {
	t.Helper()
	evs, err := cl.Events(ctx(t), after)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var out []string
	for _, e := range evs {
		if slices.Contains(kinds, e.Kind) {
			out = append(out, e.Kind+": "+e.Detail)
		}
	}
	return out
}

// TestTokenLifecycle issues a token through a follower, which forwards
// the write to the leader; every server then maps it to its user until it
// expires (by the time asked, not by waiting) or is revoked.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	follower := (leader + 1) % 3
	root := c.ClientAs("root", follower)

	before := time.Now()
	tok, err := root.CreateToken(ctx(t), client.TokenRequest{User: "alice", TTLMS: time.Hour.Milliseconds()})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	after := time.Now()
	if !strings.HasPrefix(tok.Token, "nmt_"+tok.ID+"_") || len(tok.Token) != 56 || len(tok.ID) != 8 || tok.User != "alice" {
		t.Fatalf("got token %+v, want nmt_<8 hex>_<43 base64url> for alice", tok)
	}
	if tok.ExpiresAt.Before(before.Add(time.Hour).Truncate(time.Millisecond)) || tok.ExpiresAt.After(after.Add(time.Hour)) {
		t.Errorf("got expiry %v, want an hour after the request (%v to %v)", tok.ExpiresAt, before, after)
	}

	for i, s := range c.Servers {
		testwait.For(t, 5*time.Second, fmt.Sprintf("s%d maps the token to alice", i), func() bool {
			user, err := s.TokenUser(tok.Token, time.Now())
			return err == nil && user == "alice"
		})
	}

	list, err := root.Tokens(ctx(t))
	if err != nil {
		t.Fatalf("list tokens: %v", err)
	}
	want := client.Token{ID: tok.ID, User: "alice", ExpiresAt: tok.ExpiresAt, IssuedBy: "root"}
	if len(list) != 1 || list[0].IssuedAt.IsZero() {
		t.Fatalf("got tokens %+v, want one like %+v", list, want)
	}
	want.IssuedAt = list[0].IssuedAt
	if !list[0].ExpiresAt.Equal(want.ExpiresAt) || list[0].ID != want.ID || list[0].User != want.User || list[0].IssuedBy != want.IssuedBy || list[0].Expired {
		t.Errorf("got token %+v, want %+v", list[0], want)
	}

	t.Run("bearer through a follower", func(t *testing.T) {
		ca, err := pki.Load(pki.Files{CA: filepath.Join(c.CADir(), pki.CAFile)})
		if err != nil {
			t.Fatalf("load CA: %v", err)
		}
		alice, err := client.New(c.Addrs(follower), client.WithTLS(ca), client.WithToken(tok.Token))
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		job, err := alice.Submit(ctx(t), client.SubmitRequest{Spec: shSpec("true", 1)})
		if err != nil {
			t.Fatalf("submit with the token: %v", err)
		}
		if got, err := root.Job(ctx(t), job.Name); err != nil || got.Owner != "alice" {
			t.Errorf("job submitted with alice's token through a follower: got %+v, %v; want it owned by alice", got, err)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		s := c.Servers[follower]
		if user, err := s.TokenUser(tok.Token, tok.ExpiresAt.Add(-time.Millisecond)); err != nil || user != "alice" {
			t.Errorf("a millisecond before expiry: got %q, %v; want alice", user, err)
		}
		_, err := s.TokenUser(tok.Token, tok.ExpiresAt)
		if !errors.Is(err, server.ErrTokenExpired) {
			t.Fatalf("at expiry: got %v, want %v", err, server.ErrTokenExpired)
		}
		for _, want := range []string{"token " + tok.ID + " expired at " + tok.ExpiresAt.UTC().Format(time.RFC3339), "ask an admin for a new one"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("got %q, want it to say %q", err, want)
			}
		}
	})

	if err := root.RevokeToken(ctx(t), tok.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	for i, s := range c.Servers {
		testwait.For(t, 5*time.Second, fmt.Sprintf("s%d refuses the revoked token", i), func() bool {
			_, err := s.TokenUser(tok.Token, time.Now())
			return errors.Is(err, server.ErrTokenUnknown)
		})
	}
	if err := root.RevokeToken(ctx(t), tok.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("second revoke: got %v, want ErrNotFound", err)
	}
	if list, err := root.Tokens(ctx(t)); err != nil || len(list) != 0 {
		t.Errorf("after revoke: got tokens %+v, %v; want none", list, err)
	}

	got := eventDetails(t, root, 0, "token-issued", "token-revoked")
	wantEvents := []string{
		"token-issued: admin root issued token " + tok.ID + " for alice, expires " + tok.ExpiresAt.UTC().Format("2006-01-02 15:04 MST"),
		"token-revoked: admin root revoked token " + tok.ID + " of alice",
	}
	if !slices.Equal(got, wantEvents) {
		t.Errorf("got events %q, want %q", got, wantEvents)
	}
	secret := tok.Token[len("nmt_")+9:]
	evs, err := root.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	for _, e := range evs {
		if strings.Contains(e.Detail, secret) {
			t.Errorf("event %+v shows the token's secret", e)
		}
	}
}

// TestTokenUserRefuses presents malformed, unknown and forged tokens.
func TestTokenUserRefuses(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	root := c.ClientAs("root")
	tok, err := root.CreateToken(ctx(t), client.TokenRequest{User: "bob"})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	s := c.Servers[0]
	if user, err := s.TokenUser(tok.Token, time.Now()); err != nil || user != "bob" {
		t.Fatalf("the issued token: got %q, %v; want bob", user, err)
	}
	// swap changes the secret's character at i (from the token's end) to
	// another base64url character: still well formed.
	swap := func(i int) string {
		b := []byte(tok.Token)
		k := len(b) - i
		if b[k] == 'A' {
			b[k] = 'B'
		} else {
			b[k] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", server.ErrTokenMalformed},
		{"prefix only", "nmt_", server.ErrTokenMalformed},
		{"with the Bearer word", "Bearer " + tok.Token, server.ErrTokenMalformed},
		{"other prefix", "nmx_" + tok.Token[4:], server.ErrTokenMalformed},
		{"upper-case ID", "nmt_0000000A" + tok.Token[12:], server.ErrTokenMalformed},
		{"ID not hex", "nmt_zzzzzzzz" + tok.Token[12:], server.ErrTokenMalformed},
		{"no separator", tok.Token[:12] + "-" + tok.Token[13:], server.ErrTokenMalformed},
		{"one character short", tok.Token[:len(tok.Token)-1], server.ErrTokenMalformed},
		{"one character long", tok.Token + "A", server.ErrTokenMalformed},
		{"padded secret", tok.Token[:len(tok.Token)-1] + "=", server.ErrTokenMalformed},
		{"secret not base64url", tok.Token[:20] + "+/" + tok.Token[22:], server.ErrTokenMalformed},
		{"trailing newline", tok.Token[:len(tok.Token)-1] + "\n", server.ErrTokenMalformed},
		{"another secret for the ID", swap(10), server.ErrTokenUnknown},
		{"another ID for the secret", "nmt_" + otherID(tok.ID) + tok.Token[12:], server.ErrTokenUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, err := s.TokenUser(tt.token, time.Now())
			if !errors.Is(err, tt.want) || user != "" {
				t.Fatalf("got %q, %v; want %v", user, err, tt.want)
			}
			if len(tt.token) > 12 && strings.Contains(err.Error(), tt.token[12:]) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// otherID is a token ID other than id.
func otherID(id string) string {
	if id == "00000000" {
		return "00000001"
	}
	return "00000000"
}

// TestTokenRequestsRefused: only admins issue, list and revoke tokens,
// and a request must name a user and a lifetime within bounds.
func TestTokenRequestsRefused(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	root := c.ClientAs("root")
	if _, err := root.LoadDatabase(ctx(t), client.DatabaseText{Text: "admin_id tclark\n"}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	mallory := c.ClientAs("mallory")
	t.Run("not an admin", func(t *testing.T) {
		_, err := mallory.CreateToken(ctx(t), client.TokenRequest{User: "mallory"})
		wantAPIError(t, err, http.StatusForbidden, "issue token: permission denied: mallory (local user of test-host) is neither an admin_id")
		_, err = mallory.Tokens(ctx(t))
		wantAPIError(t, err, http.StatusForbidden, "list tokens: permission denied")
		wantAPIError(t, mallory.RevokeToken(ctx(t), "0a1b2c3d"), http.StatusForbidden, "revoke token 0a1b2c3d: permission denied")
	})
	tests := []struct {
		name string
		req  client.TokenRequest
		want string
	}{
		{"no user", client.TokenRequest{TTLMS: 1000}, "a user is required"},
		{"not a user name", client.TokenRequest{User: "bob smith"}, `"bob smith" is not a user name`},
		{"leading dash", client.TokenRequest{User: "-bob"}, `"-bob" is not a user name`},
		{"negative lifetime", client.TokenRequest{User: "bob", TTLMS: -1}, "ttl_ms -1 is negative"},
		{"too long a lifetime", client.TokenRequest{User: "bob", TTLMS: (client.MaxTokenTTL + time.Millisecond).Milliseconds()}, "longer than the longest, 8760h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := root.CreateToken(ctx(t), tt.req)
			wantAPIError(t, err, http.StatusBadRequest, tt.want)
		})
	}
	t.Run("unknown ID", func(t *testing.T) {
		wantAPIError(t, root.RevokeToken(ctx(t), "deadbeef"), http.StatusNotFound, "no such token (netmgr token list shows the tokens held)")
	})
	t.Run("default lifetime", func(t *testing.T) {
		before := time.Now()
		tok, err := root.CreateToken(ctx(t), client.TokenRequest{User: "tclark"})
		if err != nil {
			t.Fatalf("create token: %v", err)
		}
		if d := tok.ExpiresAt.Sub(before); d < client.DefaultTokenTTL-time.Second || d > client.DefaultTokenTTL+time.Minute {
			t.Errorf("got a lifetime of %v, want %v", d, client.DefaultTokenTTL)
		}
	})
	if list, err := root.Tokens(ctx(t)); err != nil || len(list) != 1 {
		t.Errorf("got tokens %+v, %v; want only the one issued with the default lifetime", list, err)
	}
}

// TestAdminActionsInEvents: database loads and queue changes appear in
// the events with the admin who made them.
func TestAdminActionsInEvents(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	root := c.ClientAs("root")
	// The cluster loaded a database of its own (by "server s0") first.
	before, err := root.Events(ctx(t), 0)
	if err != nil || len(before) == 0 {
		t.Fatalf("events: got %d, %v; want the cluster's first ones", len(before), err)
	}
	if _, err := root.LoadDatabase(ctx(t), client.DatabaseText{Filename: "site.db", Text: "admin_id tclark\nmachine alpha = {}\nadd_q NEW_Q = {nq_maxsize=10}\n"}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	tclark := c.ClientAs("tclark")
	if _, err := tclark.SetQueue(ctx(t), client.Queue{Name: "batch", MaxActive: 2}); err != nil {
		t.Fatalf("add queue: %v", err)
	}
	if _, err := tclark.SetQueue(ctx(t), client.Queue{Name: "batch", Priority: 3}); err != nil {
		t.Fatalf("change queue: %v", err)
	}
	if err := tclark.RemoveQueue(ctx(t), "batch"); err != nil {
		t.Fatalf("remove queue: %v", err)
	}
	got := eventDetails(t, root, before[len(before)-1].Index, "database-loaded", "queue-added", "queue-changed", "queue-removed")
	want := []string{
		"database-loaded: admin root loaded the database from site.db (1 machine, 1 queue)",
		"queue-added: admin tclark added queue batch: priority 0, max active 2",
		"queue-changed: admin tclark changed queue batch: priority 3, no limits",
		"queue-removed: admin tclark removed queue batch",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLeaderSweepsExpiredTokens: the leader revokes a token a day after
// it expired, and no sooner.
func TestLeaderSweepsExpiredTokens(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 1)
	s := c.Servers[c.WaitLeader()]
	root := c.ClientAs("root")
	short, err := root.CreateToken(ctx(t), client.TokenRequest{User: "alice", TTLMS: time.Hour.Milliseconds()})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	long, err := root.CreateToken(ctx(t), client.TokenRequest{User: "bob"})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	ids := func() []string {
		list, err := root.Tokens(ctx(t))
		if err != nil {
			t.Fatalf("list tokens: %v", err)
		}
		var out []string
		for _, tk := range list {
			out = append(out, tk.ID)
		}
		return out
	}
	s.SweepTokens(short.ExpiresAt.Add(24 * time.Hour))
	if got, want := ids(), []string{short.ID, long.ID}; !slices.Equal(got, want) {
		t.Fatalf("a day after the expiry, not more: got tokens %v, want %v", got, want)
	}
	s.SweepTokens(short.ExpiresAt.Add(24*time.Hour + time.Millisecond))
	if got, want := ids(), []string{long.ID}; !slices.Equal(got, want) {
		t.Fatalf("over a day after the expiry: got tokens %v, want %v", got, want)
	}
	want := []string{"token-revoked: server s0 revoked token " + short.ID + " of alice (expired " + short.ExpiresAt.UTC().Format("2006-01-02 15:04 MST") + ")"}
	if got := eventDetails(t, root, 0, "token-revoked"); !slices.Equal(got, want) {
		t.Errorf("got events %q, want %q", got, want)
	}
}
