package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

const (
	// gossipToTheDead is memberlist's GossipToTheDeadTime in its LAN
	// defaults, which stubs and servers use: a member that has held
	// another dead this long stops gossiping to it and forgets it.
	gossipToTheDead = 30 * time.Second
	// healWithin is how soon after a leader exists a job submitted then
	// must run, and every machine be up again.
	healWithin = 10 * time.Second
	// holdUntil is how long after the election the machines must stay
	// up: past the leader's grace for machines gossip has never shown it
	// (15 s), after which a leader that saw no stub took them all down.
	holdUntil = 20 * time.Second
)

// TestServerGroupRestartHeals SIGKILLs every server while the stubs run
// on, keeps the group down, and starts the servers again on their data
// directories and addresses, twice: for 10 s, and until every stub has
// held every server dead for longer than memberlist keeps gossiping to a
// dead member (so that the stubs have forgotten the servers and the
// restarted servers know no stub). Each time, with no stub restarted, a
// job submitted once a leader exists runs within 10 s, every machine is
// up, and no machine went down.
func TestServerGroupRestartHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and keeps a server group down for about a minute")
	}
	// It waits out outages and firings more than it computes, on a
	// cluster of its own.
	t.Parallel()
	c, cl := procCluster(t, t.TempDir(), 3, 2)
	stubPIDs := make([]int, len(c.Stubs))
	for i, p := range c.Stubs {
		stubPIDs[i] = p.PID()
	}
	tests := []struct {
		name string
		// outage returns once the servers have been down long enough.
		outage func(t *testing.T, killed time.Time)
	}{
		{"down 10 s", func(t *testing.T, killed time.Time) {
			<-time.After(time.Until(killed.Add(10 * time.Second)))
		}},
		{"down until the stubs forget the servers", func(t *testing.T, killed time.Time) {
			testwait.For(t, 60*time.Second, "every stub to hold every server dead", func() bool {
				for _, p := range c.Stubs {
					if n, err := stubGossipServers(c, p); err != nil || n != 0 {
						return false
					}
				}
				return true
			})
			t.Logf("every stub holds every server dead %v after the kill; down %v more", time.Since(killed).Round(time.Second), gossipToTheDead+2*time.Second)
			<-time.After(gossipToTheDead + 2*time.Second)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.WaitMachines(len(c.Stubs), 30*time.Second); err != nil {
				t.Fatal(err)
			}
			after := lastEvent(t, cl)
			for i := range c.Servers {
				if err := c.KillServer(i, syscall.SIGKILL); err != nil {
					t.Fatalf("kill server %d: %v", i, err)
				}
			}
			killed := time.Now()
			tc.outage(t, killed)
			t.Logf("servers down %v", time.Since(killed).Round(100*time.Millisecond))
			for i := range c.Servers {
				if err := c.RestartServer(i); err != nil {
					t.Fatalf("restart server %d: %v", i, err)
				}
			}
			if err := c.WaitLeader(60 * time.Second); err != nil {
				t.Fatal(err)
			}
			elected := time.Now()

			ctx, cancel := context.WithTimeout(context.Background(), healWithin)
			defer cancel()
			sub, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
				Binaries: map[string]string{client.AnyKey: "/bin/true"}, Min: 1,
			}})
			if err != nil {
				t.Fatalf("submit once a leader exists: %v", err)
			}
			if _, err := cl.WaitJob(ctx, fmt.Sprint(sub.ID), client.WaitStarted); err != nil {
				t.Fatalf("the job submitted once a leader exists did not run within %v: %v", healWithin, err)
			}
			t.Logf("job running %v after a leader was seen", time.Since(elected).Round(10*time.Millisecond))
			if err := c.WaitMachines(len(c.Stubs), time.Until(elected.Add(healWithin))); err != nil {
				t.Fatalf("every machine up within %v of the election: %v", healWithin, err)
			}
			t.Logf("every machine up %v after a leader was seen", time.Since(elected).Round(10*time.Millisecond))

			for time.Since(elected) < holdUntil {
				if down := machinesDown(t, cl); len(down) > 0 {
					t.Fatalf("%v after the election machines %v are down", time.Since(elected).Round(100*time.Millisecond), down)
				}
				<-time.After(250 * time.Millisecond)
			}
			evs, err := cl.Events(context.Background(), after)
			if err != nil {
				t.Fatalf("events: %v", err)
			}
			for _, e := range evs {
				if e.Kind == fsm.EventMachineLeft {
					t.Errorf("machine %s went down at %s (%s): no machine may go down because the servers were away", e.Machine, e.At.Format(time.StampMilli), e.Detail)
				}
			}
			for i, p := range c.Stubs {
				if !p.Running() || p.PID() != stubPIDs[i] {
					t.Errorf("stub %s was restarted (pid %d, was %d)", p.Name, p.PID(), stubPIDs[i])
				}
			}
		})
	}
}

// stubGossipServers reads how many servers the stub p holds alive in its
// gossip view, from its metrics.
func stubGossipServers(c *servertest.ProcCluster, p *servertest.Proc) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "netmgr_stub_gossip_servers "); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("metrics of %s: no netmgr_stub_gossip_servers", p.Name)
}

// lastEvent returns the index of the last committed event.
func lastEvent(t *testing.T, cl *client.Client) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, err := cl.Events(ctx, 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Index
}

// machinesDown returns the machines the servers hold down.
func machinesDown(t *testing.T, cl *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := cl.Machines(ctx)
	if err != nil {
		t.Fatalf("machines: %v", err)
	}
	var down []string
	for _, m := range ms {
		if m.State == client.MachineDown {
			down = append(down, m.Name)
		}
	}
	return down
}
