package server

import (
	"context"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// TestJoinFactsByAddress checks that a join takes only the facts a stub
// sent from the address gossip shows for it, takes them once, and that a
// join waiting for facts is woken by their arrival and gives up after its
// wait.
func TestJoinFactsByAddress(t *testing.T) {
	j := newJoinFacts()
	j.put(client.Facts{Name: "m1", HTTPAddr: "127.0.0.1:1", CPUs: 4})
	if _, ok := j.take("m1", "127.0.0.1:2"); ok {
		t.Fatalf("took facts sent from 127.0.0.1:1 for a stub at 127.0.0.1:2")
	}
	if !j.has("m1") {
		t.Fatalf("facts from another address were dropped")
	}
	if f, ok := j.take("m1", "127.0.0.1:1"); !ok || f.CPUs != 4 {
		t.Fatalf("take = %+v, %v; want the facts sent", f, ok)
	}
	if _, ok := j.take("m1", "127.0.0.1:1"); ok {
		t.Fatalf("facts taken twice")
	}

	got := make(chan bool, 1)
	go func() {
		_, ok := j.wait(context.Background(), "m2", "127.0.0.1:3", time.Minute)
		got <- ok
	}()
	j.put(client.Facts{Name: "m3", HTTPAddr: "127.0.0.1:4"}) // another machine's: wait goes on
	j.put(client.Facts{Name: "m2", HTTPAddr: "127.0.0.1:3"})
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("wait gave up though the facts arrived")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wait not woken by the facts' arrival")
	}
	if _, ok := j.wait(context.Background(), "m4", "127.0.0.1:5", 10*time.Millisecond); ok {
		t.Fatalf("wait returned facts no stub sent")
	}
}
