package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// primeWindowDB declares queue debug with a prime-time window, in UTC,
// from open to close (every day, to the second).
func primeWindowDB(open, close time.Time) string {
	return fmt.Sprintf("add_q debug = {priority=5, nq_maxuser_active=2, \\\n"+
		"  prime={window=\"%s-%s\", priority=20, nq_maxuser_active=8}}\n", open.Format("15:04:05"), close.Format("15:04:05"))
}

// debugQueue reads queue debug through cl.
func debugQueue(t *testing.T, cl *client.Client) (client.Queue, bool) {
	t.Helper()
	qs, err := cl.Queues(ctx(t))
	if err != nil {
		return client.Queue{}, false
	}
	for _, q := range qs {
		if q.Name == "debug" && q.Prime != nil {
			return q, true
		}
	}
	return client.Queue{}, false
}

// TestPrimeTimeAcrossLeaderChange: on a 3-server TLS cluster, a window a
// few seconds ahead opens and closes, each time with the leader that was
// to switch it cut off first: the next leader switches it, at the
// window's edge, and every switch happens once (one prime-opened and one
// prime-closed event), with the values in force following it.
func TestPrimeTimeAcrossLeaderChange(t *testing.T) {
	t.Parallel()
	c := servertest.NewCluster(t, 3)
	c.WaitLeader()
	now := time.Now().UTC()
	open := now.Truncate(time.Second).Add(6 * time.Second)
	closeAt := open.Add(8 * time.Second)
	if _, err := c.ClientAs("root").LoadDatabase(ctx(t), client.DatabaseText{Filename: "prime.db", Text: primeWindowDB(open, closeAt)}); err != nil {
		t.Fatalf("load: %v", err)
	}
	if q, ok := debugQueue(t, c.Client()); !ok || q.Prime.Open || q.Priority != 5 || !q.Prime.Next.Equal(open) || !q.Prime.NextOpen {
		t.Fatalf("before the window: %+v %+v, want closed, priority 5, next change %v opening", q, q.Prime, open)
	}
	rest := func(skip int) []int {
		var out []int
		for i := range 3 {
			if i != skip {
				out = append(out, i)
			}
		}
		return out
	}
	// Cut the leader off before the window opens: the next one opens it.
	old := c.WaitLeader()
	c.Isolate(old)
	c.WaitLeader(old)
	others := c.Client(rest(old)...)
	testwait.For(t, 20*time.Second, "the window to open", func() bool {
		q, ok := debugQueue(t, others)
		return ok && q.Prime.Open
	})
	q, _ := debugQueue(t, others)
	if !q.Prime.Since.Equal(open) || q.Priority != 20 || q.MaxUserActive != 8 || !q.Prime.Next.Equal(closeAt) {
		t.Errorf("open: %+v %+v, want since %v, priority 20, nq_maxuser_active 8, next change %v", q, q.Prime, open, closeAt)
	}
	c.Heal()
	// And again before it closes.
	old = c.WaitLeader()
	c.Isolate(old)
	c.WaitLeader(old)
	others = c.Client(rest(old)...)
	testwait.For(t, 20*time.Second, "the window to close", func() bool {
		q, ok := debugQueue(t, others)
		return ok && !q.Prime.Open && q.Prime.Since.Equal(closeAt)
	})
	c.Heal()
	testwait.For(t, 20*time.Second, "every server to hold the close", func() bool {
		for i := range 3 {
			if q, ok := debugQueue(t, c.Client(i)); !ok || q.Prime.Open || !q.Prime.Since.Equal(closeAt) || q.Priority != 5 {
				return false
			}
		}
		return true
	})
	evs, err := c.Client().Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	count := map[string]int{}
	for _, e := range evs {
		if strings.HasPrefix(e.Kind, "prime-") && strings.Contains(e.Detail, "queue debug") {
			count[e.Kind]++
		}
	}
	if count["prime-opened"] != 1 || count["prime-closed"] != 1 {
		t.Errorf("switch events %v, want one prime-opened and one prime-closed", count)
	}
}
