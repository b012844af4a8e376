package server_test

import (
	"errors"
	"fmt"
	"github.com/netmgr/netmgr/internal/testwait"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// serverNames lists the names in a GET /v1/servers answer.
func serverNames(ss []client.Server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// wantAPIError checks that err is a server's answer with the given status
// and a message containing want.
func wantAPIError(t *testing.T, err error, status int, want string) {
	t.Helper()
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("got error %v, want a %d answer", err, status)
	}
	if apiErr.Status != status || !strings.Contains(apiErr.Message, want) {
		t.Fatalf("got %d %q, want %d containing %q", apiErr.Status, apiErr.Message, status, want)
	}
}

func TestServersReportContactAndHealth(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	cl := c.Client()
	var servers []client.Server
	testwait.For(t, 10*time.Second, "every server healthy", func() bool {
		var err error
		servers, err = cl.Servers(ctx(t))
		if err != nil || len(servers) != 3 {
			return false
		}
		for _, s := range servers {
			if !s.Healthy {
				return false
			}
		}
		return true
	})
	for _, s := range servers {
		if s.Name == fmt.Sprintf("s%d", leader) {
			if s.LastContact != "leader" {
				t.Errorf("leader %s: got last contact %q, want %q", s.Name, s.LastContact, "leader")
			}
			continue
		}
		d, err := time.ParseDuration(s.LastContact)
		if err != nil {
			t.Errorf("follower %s: got last contact %q, want a duration", s.Name, s.LastContact)
		} else if d > time.Second {
			t.Errorf("follower %s: got last contact %v, want at most 1s", s.Name, d)
		}
	}
}

func TestRemoveServer(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	leaderName := fmt.Sprintf("s%d", leader)
	follower := (leader + 1) % 3
	followerName := fmt.Sprintf("s%d", follower)
	cl := c.Client()

	refusals := []struct {
		name   string
		server string
		status int
		want   string
	}{
		{name: "unknown", server: "s9", status: http.StatusNotFound, want: "not a member"},
		{name: "leader", server: leaderName, status: http.StatusConflict, want: "transfer leadership first"},
		{name: "alive", server: followerName, status: http.StatusConflict, want: "stop it first"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			wantAPIError(t, cl.RemoveServer(ctx(t), tt.server), tt.status, tt.want)
		})
	}
	t.Run("unknown is ErrNotFound", func(t *testing.T) {
		if err := cl.RemoveServer(ctx(t), "s9"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("got %v, want ErrNotFound", err)
		}
	})

	if err := c.Servers[follower].Shutdown(); err != nil {
		t.Fatalf("stop %s: %v", followerName, err)
	}
	// Gossip reports the stopped server gone within a probe or two; until
	// then the servers refuse it as alive.
	testwait.For(t, 10*time.Second, "removal of the stopped follower", func() bool {
		err := cl.RemoveServer(ctx(t), followerName)
		var apiErr *client.APIError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
			return false
		}
		if err != nil {
			t.Fatalf("remove %s: %v", followerName, err)
		}
		return true
	})

	want := []string{"s0", "s1", "s2"}
	want = slices.DeleteFunc(want, func(n string) bool { return n == followerName })
	// The leader reconciles membership every tick: watch several ticks to
	// see that it does not add the removed server back.
	deadline := time.Now().Add(2 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		servers, err := cl.Servers(ctx(t))
		if err != nil {
			t.Fatalf("servers: %v", err)
		}
		if got := serverNames(servers); !slices.Equal(got, want) {
			t.Fatalf("got servers %v, want %v", got, want)
		}
		if time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	t.Run("removed is unknown", func(t *testing.T) {
		wantAPIError(t, cl.RemoveServer(ctx(t), followerName), http.StatusNotFound, "not a member")
	})
	// The two left still commit writes.
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Text: "key fpu\n"}); err != nil {
		t.Fatalf("write after removal: %v", err)
	}
	// The removal, a configuration change the FSM never sees, is among
	// the events with the admin who made it.
	want = []string{"server-removed: admin " + servertest.CurrentUser(t) + " removed server " + followerName + " from the raft group"}
	if got := eventDetails(t, cl, 0, "server-removed"); !slices.Equal(got, want) {
		t.Errorf("got events %q, want %q", got, want)
	}
}

func TestRemoveServerNeedsAdmin(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	leader := c.WaitLeader()
	followerName := fmt.Sprintf("s%d", (leader+1)%3)
	root := c.Client()
	db := "admin_id someoneelse\nadmin_id " + servertest.CurrentUser(t) + "\n"
	if _, err := root.LoadDatabase(ctx(t), client.DatabaseText{Filename: "admins.db", Text: db}); err != nil {
		t.Fatalf("load database: %v", err)
	}
	nobody := c.ClientAs("nobody")
	wantAPIError(t, nobody.RemoveServer(ctx(t), followerName), http.StatusForbidden, "nobody (local user of test-host) is neither an admin_id")
	servers, err := root.Servers(ctx(t))
	if err != nil {
		t.Fatalf("servers: %v", err)
	}
	if got := len(servers); got != 3 {
		t.Fatalf("got %d servers after a refused removal, want 3", got)
	}
}
