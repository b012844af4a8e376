package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

func TestParseTTL(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"30d", 30 * day, false},
		{"365d", 365 * day, false},
		{"1d12h", 36 * time.Hour, false},
		{"12h", 12 * time.Hour, false},
		{"90m", 90 * time.Minute, false},
		{"1ms", time.Millisecond, false},
		{" 7d ", 7 * day, false},
		{"366d", 0, true},
		{"365d1s", 0, true},
		{"0d", 0, true},
		{"0s", 0, true},
		{"-1h", 0, true},
		{"-1d", 0, true},
		{"1d-1h", 0, true},
		{"1µs", 0, true},
		{"d", 0, true},
		{"1.5d", 0, true},
		{"30", 0, true},
		{"soon", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTTL(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseTTL(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseTTL(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

var tokenPattern = regexp.MustCompile(`nmt_([0-9a-f]{8})_[A-Za-z0-9_-]{43}`)

// TestTokenCommands issues, lists and revokes tokens with the CLI against
// a TLS server in this process, as an admin with a client certificate;
// then the CLI with a token and no certificate acts as the token's user.
func TestTokenCommands(t *testing.T) {
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	const me = "tclark"
	if _, err := c.ClientAs("root").LoadDatabase(context.Background(), client.DatabaseText{Text: "admin_id " + me + "\n"}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	files := c.Files(pki.Identity{Role: pki.RoleClient, Name: me})
	t.Setenv(envAddr, c.Addrs()[0]) // https: no scheme
	t.Setenv(envCACert, files.CA)
	t.Setenv(envClientCert, files.Cert)
	t.Setenv(envClientKey, files.Key)
	t.Setenv(envToken, "")
	t.Setenv("HOME", t.TempDir()) // no ~/.config/netmgr/token

	code, out, errOut := runCLI(t, "netmgr", "token", "create", "--user", "alice", "--ttl", "2h")
	if code != exitOK {
		t.Fatalf("token create: exit %d, stderr:\n%s", code, errOut)
	}
	m := tokenPattern.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("token create printed no token:\n%s", out)
	}
	alice, aliceID := m[0], m[1]
	for _, want := range []string{
		"token " + aliceID + " for alice, expires ",
		"\n  " + alice + "\n",
		"only time it is shown",
		"export NETMGR_TOKEN=" + alice + "\n",
		"(umask 077 && echo '" + alice + "' > ~/.config/netmgr/token)",
		"$NETMGR_CACERT at a copy of the cluster's ca.pem",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("token create printed:\n%s\nwant it to contain %q", out, want)
		}
	}

	code, out, errOut = runCLI(t, "netmgr", "token", "create", "--user", "ci", "--ttl", "7d", "-q")
	if code != exitOK || !tokenPattern.MatchString(out) || out != tokenPattern.FindString(out)+"\n" {
		t.Fatalf("token create -q: exit %d, stdout %q, stderr %q; want the token alone", code, out, errOut)
	}
	ci, ciID := tokenPattern.FindString(out), tokenPattern.FindStringSubmatch(out)[1]

	// A token that lasts a millisecond is listed as expired at once (the
	// wait is only for a coarse clock).
	if code, _, errOut = runCLI(t, "netmgr", "token", "create", "--user", "bob", "--ttl", "1ms", "-q"); code != exitOK {
		t.Fatalf("token create --ttl 1ms: exit %d, stderr:\n%s", code, errOut)
	}
	var lines []string
	testwait.For(t, 5*time.Second, "the short token listed as expired", func() bool {
		code, out, errOut = runCLI(t, "netmgr", "token", "list")
		if code != exitOK {
			t.Fatalf("token list: exit %d, stderr:\n%s", code, errOut)
		}
		lines = strings.Split(strings.TrimRight(out, "\n"), "\n")
		return len(lines) == 4 && strings.Contains(lines[3], "(expired)")
	})
	header := strings.Fields(lines[0])
	if want := []string{"ID", "USER", "ISSUED", "EXPIRES", "BY"}; strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("got header %q, want %q", header, want)
	}
	for i, want := range []struct{ id, user string }{{aliceID, "alice"}, {ciID, "ci"}} {
		f := strings.Fields(lines[i+1])
		if len(f) != 5 || f[0] != want.id || f[1] != want.user || f[4] != me {
			t.Errorf("line %d = %q, want ID %s, user %s, by %s and no expired mark", i+1, lines[i+1], want.id, want.user, me)
		}
	}
	if strings.Contains(out, alice[13:]) {
		t.Errorf("token list shows a secret:\n%s", out)
	}

	code, out, errOut = runCLI(t, "netmgr", "token", "list", "--json")
	var listed []client.Token
	if code != exitOK || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 3 || listed[0].ID != aliceID || !listed[2].Expired {
		t.Fatalf("token list --json: exit %d, stdout %s, stderr %s; want 3 tokens, alice's first, the last expired", code, out, errOut)
	}

	if code, out, errOut = runCLI(t, "netmgr", "token", "revoke", aliceID); code != exitOK || out != "token "+aliceID+" revoked\n" {
		t.Fatalf("token revoke: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "netmgr", "token", "revoke", aliceID)
	if want := "netmgr token: revoke token " + aliceID + ": no such token (netmgr token list shows the tokens held)\n"; code != exitError || errOut != want {
		t.Errorf("second revoke: exit %d, stderr %q; want %d and %q", code, errOut, exitError, want)
	}
	if _, out, _ = runCLI(t, "netmgr", "token", "list"); strings.Contains(out, aliceID) {
		t.Errorf("token list after revoke still shows %s:\n%s", aliceID, out)
	}

	// The CLI with ci's token and no certificate acts as ci, who is no
	// admin.
	t.Setenv(envClientCert, "")
	t.Setenv(envClientKey, "")
	t.Setenv(envToken, ci)
	code, _, errOut = runCLI(t, "netmgr", "token", "list")
	if want := "list tokens: permission denied: ci (token "; code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("token list with ci's token: exit %d, stderr %q; want %d and %q", code, errOut, exitError, want)
	}
	t.Setenv(envToken, alice)
	code, _, errOut = runCLI(t, "netmgr", "token", "list")
	if want := "unknown or revoked token " + aliceID; code != exitError || !strings.Contains(errOut, want) {
		t.Errorf("token list with alice's revoked token: exit %d, stderr %q; want %d and %q", code, errOut, exitError, want)
	}
	t.Setenv(envToken, "")
	t.Setenv(envClientCert, files.Cert)
	t.Setenv(envClientKey, files.Key)

	_, out, _ = runCLI(t, "netmgr", "events")
	for _, want := range []string{
		"token-issued  admin " + me + " issued token " + aliceID + " for alice, expires ",
		"token-revoked  admin " + me + " revoked token " + aliceID + " of alice",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("netmgr events printed:\n%s\nwant a line containing %q", out, want)
		}
	}
}

// TestTokenUsageErrors: mistakes on the command line exit 2 before any
// request.
func TestTokenUsageErrors(t *testing.T) {
	t.Setenv(envAddr, "http://127.0.0.1:1")
	t.Setenv(envRetryFor, "100ms")
	t.Setenv(envToken, "")
	t.Setenv("HOME", t.TempDir())
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"token"}, "no token command given"},
		{"unknown subcommand", []string{"token", "show"}, `unknown token command "show"`},
		{"create without user", []string{"token", "create"}, "--user is required"},
		{"create with an argument", []string{"token", "create", "--user", "a", "b"}, `unexpected argument "b"`},
		{"ttl too long", []string{"token", "create", "--user", "a", "--ttl", "400d"}, "longer than a token may last, 365d"},
		{"ttl not a duration", []string{"token", "create", "--user", "a", "--ttl", "forever"}, `"forever" is neither a duration`},
		{"list with an argument", []string{"token", "list", "alice"}, `unexpected argument "alice"`},
		{"revoke without ID", []string{"token", "revoke"}, "missing token ID"},
		{"revoke two", []string{"token", "revoke", "a", "b"}, "one token ID at a time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, append([]string{"netmgr"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tt.want)
			}
		})
	}
}
