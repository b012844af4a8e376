package stub

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// treePool is a pool of outage sides of stubs, each serving the outage
// API over real HTTP on loopback and knowing every other as a peer, with
// a fan-out small enough that a round goes through the tree.
type treePool struct {
	names []string
	sides map[string]*outage
	srvs  map[string]*httptest.Server
}

// newTreePool starts n stubs' outage sides with the given fan-out; the
// machines of expired say their leases ran out, each knowing a pool of n.
func newTreePool(t *testing.T, n, fan int, expired func(i int) bool) *treePool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := &treePool{sides: make(map[string]*outage), srvs: make(map[string]*httptest.Server)}
	for i := range n {
		name := fmt.Sprintf("s%03d", i)
		k := newLeaseKeeper(name, t.TempDir(), nil, nil, nil, log)
		k.mu.Lock()
		k.position, k.poolSize, k.grace = i+1, n, time.Hour
		k.mu.Unlock()
		if expired(i) {
			k.deadline.Store(int64(supervisor.BootNow()))
		} else {
			k.deadline.Store(int64(supervisor.BootNow() + time.Hour))
		}
		o := newOutage(name, k, newPeerList(nil), log)
		o.fanOut = fan
		s := &Stub{outage: o}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/outage", s.handleOutageStatement)
		mux.HandleFunc("POST /v1/outage/witness", s.handleOutageWitness)
		mux.HandleFunc("GET /v1/outage/tally", s.handleOutageTally)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		go o.witness.run(ctx)
		p.names = append(p.names, name)
		p.sides[name], p.srvs[name] = o, srv
	}
	for _, a := range p.names {
		for _, b := range p.names {
			if a != b {
				p.sides[a].peers.set(b, p.srvs[b].Listener.Addr().String())
			}
		}
	}
	return p
}

// collect asks for one round's answer as the stub named from does before
// it extends its cover.
func (p *treePool) collect(t *testing.T, from string) (witnessResult, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), client.OutageAnswerWithin)
	defer cancel()
	return p.sides[from].collect(ctx, supervisor.BootNow())
}

func TestChunkSizeBoundsWhatOneStubAsks(t *testing.T) {
	for _, tc := range []struct{ n, fan, want int }{
		{1, 128, 1}, {128, 128, 128}, {129, 128, 65}, {10_000, 128, 127},
		{16_384, 128, 128}, {100_000, 128, 782}, {11, 3, 4}, {4, 3, 2},
	} {
		if got := chunkSize(tc.n, tc.fan); got != tc.want {
			t.Errorf("chunkSize(%d, %d) = %d, want %d", tc.n, tc.fan, got, tc.want)
		}
		if ranges := (tc.n + chunkSize(tc.n, tc.fan) - 1) / chunkSize(tc.n, tc.fan); ranges > tc.fan {
			t.Errorf("chunkSize(%d, %d) makes %d ranges, more than the fan-out", tc.n, tc.fan, ranges)
		}
	}
}

// The tree's tally of a round is the count the witness would make from
// every statement itself, whoever asks, for random pools in which random
// machines say their leases ran out; and a stub asks the first stubs of
// its own range, not the pool's witness.
func TestOutageTreeTalliesAsEveryStatementWould(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 2))
	for round := range 4 {
		n := 5 + r.IntN(20)
		exp := make([]bool, n)
		var sts []client.OutageStatement
		for i := range exp {
			exp[i] = r.IntN(3) > 0
			sts = append(sts, client.OutageStatement{Machine: fmt.Sprintf("s%03d", i), Expired: exp[i], Position: i + 1, PoolSize: n})
		}
		wantExpired, wantPool := countExpired(sts, 0)
		p := newTreePool(t, n, 3, func(i int) bool { return exp[i] })
		for _, from := range []string{p.names[0], p.names[n/2], p.names[n-1]} {
			res, ok := p.collect(t, from)
			if !ok {
				t.Fatalf("round %d (%d stubs): %s got no answer", round, n, from)
			}
			got := res.tally
			if got.Expired != wantExpired || got.Pool != wantPool || got.Answered != n || len(res.sts) != 0 {
				t.Errorf("round %d (%d stubs), asked by %s: tally %+v and %d statements, want %d expired of %d, %d answered, no statements",
					round, n, from, got, len(res.sts), wantExpired, wantPool, n)
			}
		}
		last := p.names[n-1]
		if ws := witnessesFor(p.sides[last].peers.withSelf(last), last, 3); ws[0].name == p.names[0] {
			t.Errorf("round %d: the last of %d stubs asks the pool's witness %s itself", round, n, ws[0].name)
		}
	}
}

// Within the fan-out the witness answers with every statement, as stubs
// before the tree did, and its tally beside them.
func TestOutageWitnessWithinTheFanOutSendsTheStatements(t *testing.T) {
	p := newTreePool(t, 4, 128, func(i int) bool { return i != 2 })
	res, ok := p.collect(t, "s003")
	if !ok {
		t.Fatal("no answer")
	}
	if len(res.sts) != 4 || res.tally != (client.OutageTally{Expired: 3, Pool: 4, Answered: 4}) {
		t.Errorf("answer: %d statements, tally %+v; want 4 and 3 expired of 4, 4 answered", len(res.sts), res.tally)
	}
}

// A dead stub is left out of the tally, and a range whose first stub is
// dead is tallied by its second, as the pool is by its second witness
// when the first is dead: the answer still comes in time.
func TestOutageTreeRidesOverDeadStubs(t *testing.T) {
	p := newTreePool(t, 11, 3, func(int) bool { return true })
	// s000 is the pool's witness and heads the first range; s004 heads
	// the second (ranges of 4); s009 is a leaf of the last.
	for _, dead := range []string{"s000", "s004", "s009"} {
		p.srvs[dead].Close()
	}
	for _, from := range []string{"s001", "s005", "s010"} {
		start := time.Now()
		res, ok := p.collect(t, from)
		if !ok {
			t.Fatalf("%s got no answer with 3 of 11 stubs dead", from)
		}
		if took := time.Since(start); took > client.OutageAnswerWithin {
			t.Errorf("%s's answer took %v, longer than a stub waits (%v)", from, took, client.OutageAnswerWithin)
		}
		// The dead stubs' own sides still know the others, but nobody
		// can reach them: 8 statements.
		if res.tally.Expired != 8 || res.tally.Pool != 11 {
			t.Errorf("asked by %s: tally %+v, want 8 expired of 11", from, res.tally)
		}
	}
}

// A stub whose pool mostly says its leases ran out gets cover through
// the tree; one whose pool mostly holds its leases does not.
func TestOutageTreeCoversOnlyAMajority(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expired  func(int) bool
		covering bool
	}{
		{"7 of 11 cut off", func(i int) bool { return i < 7 }, true},
		{"5 of 11 cut off", func(i int) bool { return i < 5 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTreePool(t, 11, 3, tc.expired)
			o := p.sides["s002"]
			o.ask(context.Background())
			if got := o.covers(supervisor.BootNow()); got != tc.covering {
				t.Errorf("covered %v, want %v", got, tc.covering)
			}
		})
	}
}
