package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestNetstatusShowsPrimeSwitch: against a TLS server in this process, a
// queue whose prime-time window opens a few seconds after the load shows
// closed with its next change in netstatus -q, then, once the leader has
// committed the switch, open with the prime-time values in force, in the
// table and in --json.
func TestNetstatusShowsPrimeSwitch(t *testing.T) {
	c := servertest.NewCluster(t, 1)
	c.WaitLeader()
	open := time.Now().UTC().Truncate(time.Second).Add(8 * time.Second)
	closeAt := open.Add(time.Hour)
	db := fmt.Sprintf("admin_id tclark\nadd_q debug = {priority=5, nq_maxuser_active=2, \\\n"+
		"  prime={window=\"%s-%s\", priority=20, nq_maxuser_active=8}}\n", open.Format("15:04:05"), closeAt.Format("15:04:05"))
	if _, err := c.ClientAs("root").LoadDatabase(context.Background(), client.DatabaseText{Filename: "prime.db", Text: db}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	files := c.Files(pki.Identity{Role: pki.RoleClient, Name: "tclark"})
	t.Setenv(envAddr, c.Addrs()[0])
	t.Setenv(envCACert, files.CA)
	t.Setenv(envClientCert, files.Cert)
	t.Setenv(envClientKey, files.Key)
	t.Setenv(envToken, "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("TZ", "UTC")

	row := func() string {
		t.Helper()
		code, out, errOut := runCLI(t, "netstatus", "-q")
		if code != exitOK {
			t.Fatalf("netstatus -q: exit %d, stderr:\n%s", code, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "debug ") {
				return line
			}
		}
		t.Fatalf("netstatus -q has no debug row:\n%s", out)
		return ""
	}
	before := row()
	if f := strings.Fields(before); f[1] != "5" || !strings.Contains(before, "closed until ") || !strings.Contains(before, "(then priority 20, maxuser_active 8)") {
		t.Errorf("before the window: %q, want priority 5, closed until the opening, then priority 20", before)
	}
	var after string
	testwait.For(t, 20*time.Second, "netstatus -q to show the window open", func() bool {
		after = row()
		return strings.Contains(after, "open until ")
	})
	if f := strings.Fields(after); f[1] != "20" || !strings.Contains(after, "(then priority 5, maxuser_active 2)") {
		t.Errorf("in the window: %q, want priority 20 in force, then priority 5", after)
	}
	code, out, errOut := runCLI(t, "netstatus", "-q", "--json")
	if code != exitOK {
		t.Fatalf("netstatus -q --json: exit %d, stderr:\n%s", code, errOut)
	}
	var rows []queueRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("netstatus -q --json: %v\n%s", err, out)
	}
	for _, r := range rows {
		if r.Name != "debug" {
			continue
		}
		if p := r.Prime; r.Priority != 20 || r.MaxUserActive != 8 || p == nil || !p.Open || !p.Since.Equal(open) ||
			!p.Next.Equal(closeAt) || p.NextOpen || p.Outside.Priority != 5 || p.Inside.Priority != 20 || p.TZ != "UTC" {
			t.Errorf("--json debug: %+v prime %+v, want priority 20 in force, open since %v, next change %v closing", r, p, open, closeAt)
		}
		return
	}
	t.Errorf("--json has no debug queue:\n%s", out)
}
