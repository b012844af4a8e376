package server

import (
	"context"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
)

// joinFactsWait is how long a join waits for a stub's facts to come with
// its renewals before the leader fetches them itself: a stub of this
// version sends them with its first renewal, a few hundred milliseconds
// after it joins the gossip pool, later while a whole pool joins at once;
// one that predates LeaseRequest.Facts never does, and joins that much
// later.
const joinFactsWait = LeaseDuration

// joinFacts holds the facts stubs sent with their lease renewals
// (client.LeaseRequest.Facts), by machine, until the machine's join takes
// them: the leader then joins a new stub over the connection the stub
// opened to renew, instead of opening one of its own to fetch its facts
// (over TLS, a second handshake per joining stub). Soft state of one
// leadership; safe for concurrent use.
type joinFacts struct {
	mu    sync.Mutex // guards facts and arrived
	facts map[string]client.Facts
	// arrived is closed, and replaced, whenever facts arrive.
	arrived chan struct{}
}

func newJoinFacts() *joinFacts {
	return &joinFacts{facts: make(map[string]client.Facts), arrived: make(chan struct{})}
}

// put keeps f, which the stub of machine f.Name sent, in place of any
// earlier facts of that machine.
func (j *joinFacts) put(f client.Facts) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.facts[f.Name] = f
	close(j.arrived)
	j.arrived = make(chan struct{})
}

// has reports whether facts of machine are held.
func (j *joinFacts) has(machine string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.facts[machine]
	return ok
}

// take returns, and forgets, the facts machine's stub sent from addr;
// facts from another address (an earlier stub of the machine) stay.
func (j *joinFacts) take(machine, addr string) (client.Facts, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, ok := j.facts[machine]
	if !ok || f.HTTPAddr != addr {
		return client.Facts{}, false
	}
	delete(j.facts, machine)
	return f, true
}

// wait is take, waiting up to d for the facts to arrive.
func (j *joinFacts) wait(ctx context.Context, machine, addr string, d time.Duration) (client.Facts, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		j.mu.Lock()
		arrived := j.arrived
		j.mu.Unlock()
		if f, ok := j.take(machine, addr); ok {
			return f, true
		}
		select {
		case <-ctx.Done():
			return client.Facts{}, false
		case <-timer.C:
			return client.Facts{}, false
		case <-arrived:
		}
	}
}
