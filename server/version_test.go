package server_test

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/buildinfo"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// Every server of a group reports its build's version and command level
// in GET /v1/servers, the leader's own and its peers' alike.
func TestServersReportVersion(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	c.WaitLeader()
	cl := c.Client()
	var servers []client.Server
	testwait.For(t, 10*time.Second, "three servers answering", func() bool {
		var err error
		servers, err = cl.Servers(ctx(t))
		if err != nil || len(servers) != 3 {
			return false
		}
		for _, s := range servers {
			if s.Error != "" {
				return false
			}
		}
		return true
	})
	want := buildinfo.Get("", "").Short()
	for _, s := range servers {
		if s.Version != want {
			t.Errorf("server %s: got version %q, want %q", s.Name, s.Version, want)
		}
		if s.CommandLevel != int(fsm.CommandLevel) {
			t.Errorf("server %s: got command level %d, want %d", s.Name, s.CommandLevel, fsm.CommandLevel)
		}
	}
}
