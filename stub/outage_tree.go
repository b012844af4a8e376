package stub

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
)

// The witness's tree. In a pool of at most client.OutageFanOut stubs the
// witness asks every stub for its statement itself, as it always did.
// Past that, a round splits the pool, in name order, into ranges
// (chunkSize) and asks the first stub of each for the tally of its range
// (GET /v1/outage/tally), which splits it again when it is larger still:
// every stub asks at most client.OutageFanOut others a round, the pool
// makes O(N) requests a round in all, and an answer is a few numbers, not
// every statement. A stub that asks for cover asks the first stub of its
// own range, which passes the question on to the pool's witness (the
// first stub in name order) and shares the answer among everyone who
// asked it meanwhile, so the witness hears from one stub per range, not
// from every stub. Views of the pool may differ between stubs: a range is
// named by its first and last names, so the ranges of one round hold
// distinct machines whoever tallies them, and any stub's tally counts
// only statements made after the round began.

// chunkSize is how many stubs, of n in name order, each range of a round
// holds when it asks at most fan others: n (no split) up to fan, else
// ranges of at most fan while n is at most fan squared, else fan ranges
// that their first stubs split again.
func chunkSize(n, fan int) int {
	if n <= fan {
		return n
	}
	k := min((n+fan-1)/fan, fan)
	return (n + k - 1) / k
}

// rangeOf returns the stubs of names (in name order) whose names lie in
// [from, to].
func rangeOf(names []named, from, to string) []named {
	lo, _ := slices.BinarySearchFunc(names, from, func(p named, n string) int { return strings.Compare(p.name, n) })
	hi, found := slices.BinarySearchFunc(names, to, func(p named, n string) int { return strings.Compare(p.name, n) })
	if found {
		hi++
	}
	if lo >= hi {
		return nil
	}
	return names[lo:hi]
}

// witnessesFor returns the stubs this stub asks for cover, of names (the
// pool in name order, this stub among them): the first two of its range.
// In a pool of at most fan, that is the first two of the pool.
func witnessesFor(names []named, self string, fan int) []named {
	size := chunkSize(len(names), fan)
	i, _ := slices.BinarySearchFunc(names, self, func(p named, n string) int { return strings.Compare(p.name, n) })
	lo := i / size * size
	return names[lo:min(lo+outageWitnessesTried, len(names))]
}

// tallyOf sums one range's statements.
func tallyOf(sts []client.OutageStatement) client.OutageTally {
	expired, pool := countExpired(sts, 0)
	return client.OutageTally{Expired: expired, Pool: pool, Answered: len(sts)}
}

// tally sums the statements of names (in name order), made in a round
// that begins now and ends with ctx: asked directly up to the fan-out,
// else range by range, this stub tallying itself a range it heads.
// Stubs and ranges that do not answer in time are left out.
func (o *outage) tally(ctx context.Context, names []named) client.OutageTally {
	size := chunkSize(len(names), o.fanOut)
	if size == len(names) {
		return tallyOf(o.statements(ctx, names))
	}
	var (
		mu  sync.Mutex
		sum client.OutageTally
		wg  sync.WaitGroup
	)
	for lo := 0; lo < len(names); lo += size {
		chunk := names[lo:min(lo+size, len(names))]
		wg.Go(func() {
			t, ok := o.tallyRange(ctx, chunk)
			if !ok {
				return
			}
			mu.Lock()
			sum.Add(t)
			mu.Unlock()
		})
	}
	wg.Wait()
	return sum
}

// tallyRange gets the tally of one range of a round from its first stub,
// or from its second when the first fails or has not answered within a
// third of the time left; this stub tallies a range it heads itself.
func (o *outage) tallyRange(ctx context.Context, chunk []named) (client.OutageTally, bool) {
	heads := chunk[:min(len(chunk), outageWitnessesTried)]
	for _, h := range heads {
		if h.name == o.self {
			return o.tally(ctx, chunk), true
		}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(client.OutageAnswerWithin)
	}
	left := time.Until(deadline)
	within := left * 3 / 4 // the rest carries the answer back
	from, to := chunk[0].name, chunk[len(chunk)-1].name
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		t   client.OutageTally
		err error
	}
	answers := make(chan answer, len(heads))
	ask := func(h named) {
		go func() {
			t, err := h.c.OutageTally(ctx, from, to, within)
			answers <- answer{t, err}
		}()
	}
	ask(heads[0])
	asked, failed := 1, 0
	second := time.NewTimer(left / 3)
	defer second.Stop()
	for failed < asked {
		select {
		case a := <-answers:
			if a.err == nil {
				return a.t, true
			}
			o.log.Debug("outage range did not answer", "from", from, "to", to, "err", a.err)
			failed++
		case <-second.C:
		case <-ctx.Done():
			return client.OutageTally{}, false
		}
		if asked < len(heads) { // the first failed or is slow
			ask(heads[asked])
			asked++
		}
	}
	return client.OutageTally{}, false
}

// statements asks every stub of names for its statement, at most
// witnessParallel at once; this stub answers for itself. Stubs that do
// not answer before ctx ends are left out.
func (o *outage) statements(ctx context.Context, names []named) []client.OutageStatement {
	var (
		mu  sync.Mutex
		out []client.OutageStatement
		wg  sync.WaitGroup
		sem = make(chan struct{}, witnessParallel)
	)
	for _, p := range names {
		if p.name == o.self {
			mu.Lock()
			out = append(out, o.statement())
			mu.Unlock()
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return out
		}
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := p.c.OutageStatement(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			out = append(out, st)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
