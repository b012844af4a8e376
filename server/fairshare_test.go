package server_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestFairShareAcrossLeaderChange: on a 3-server TLS cluster with one
// 1-slot machine, the test's user runs a 1-second job (charged), then
// holds the slot; its next job and then one of nobody's wait. Every
// server orders nobody's first (no usage), with the same usage; after the
// leader is cut off the new one orders the same, and when the slot frees
// it places nobody's job first.
func TestFairShareAcrossLeaderChange(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	if !c.Secure() {
		t.Fatal("the cluster runs without TLS")
	}
	c.AddStubInit("m1", "nprocs=1\n")
	me := servertest.CurrentUser(t)
	cl := c.Client()
	testwait.For(t, 30*time.Second, "fair share on and m1 up", func() bool {
		rep, err := cl.Share(ctx(t))
		ms, merr := cl.Machines(ctx(t))
		return err == nil && rep.On && merr == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})
	submit := func(as string, script string) string {
		t.Helper()
		res, err := c.ClientAs(as).Submit(ctx(t), client.SubmitRequest{Spec: shSpec(script, 1)})
		if err != nil {
			t.Fatalf("submit as %s: %v", as, err)
		}
		return strconv.FormatUint(res.ID, 10)
	}
	first := submit(me, "sleep 1")
	testwait.For(t, 30*time.Second, "the first job to end", func() bool {
		j, err := cl.Job(ctx(t), first)
		return err == nil && !j.Instances[0].EndedAt.IsZero()
	})
	hold := submit(me, "sleep 300")
	t.Cleanup(func() { _, _ = cl.Kill(ctx(t), hold, client.KillRequest{Signal: "KILL"}) })
	testwait.For(t, 30*time.Second, "the holding job to run", func() bool {
		j, err := cl.Job(ctx(t), hold)
		return err == nil && j.Instances[0].State == client.InstanceRunning
	})
	mine := submit(me, "true")
	theirs := submit("nobody", "true")
	id := func(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }
	want := []uint64{id(theirs), id(mine)}

	agree := func(servers []int) {
		t.Helper()
		testwait.For(t, 10*time.Second, "every server to order nobody's job first, with the same usage", func() bool {
			u := c.Servers[servers[0]].LocalUsage(me)
			for _, i := range servers {
				if got := c.Servers[i].LocalOrder(); !slices.Equal(got, want) || c.Servers[i].LocalUsage(me) != u || u.Value == 0 {
					return false
				}
			}
			return true
		})
	}
	agree([]int{0, 1, 2})

	old := c.WaitLeader()
	c.Isolate(old)
	next := c.WaitLeader(old)
	var rest []int
	for i := range 3 {
		if i != old {
			rest = append(rest, i)
		}
	}
	agree(rest)
	// The new leader places nobody's job first once the slot frees.
	if _, err := c.Client(rest...).Kill(ctx(t), hold, client.KillRequest{Signal: "KILL"}); err != nil {
		t.Fatalf("kill the holding job through the new leader (server %d): %v", next, err)
	}
	testwait.For(t, 30*time.Second, "nobody's job to be placed", func() bool {
		j, err := c.Client(rest...).Job(ctx(t), theirs)
		return err == nil && !j.Instances[0].PlacedAt.IsZero()
	})
	a, _ := c.Client(rest...).Job(ctx(t), theirs)
	b, _ := c.Client(rest...).Job(ctx(t), mine)
	if p := b.Instances[0].PlacedAt; !p.IsZero() && p.Before(a.Instances[0].PlacedAt) {
		t.Errorf("the test user's job was placed at %s, before nobody's at %s", p, a.Instances[0].PlacedAt)
	}
	c.Heal()
}
