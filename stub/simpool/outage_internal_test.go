package simpool

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// outagePool is a pool of n machines that know their places in a pool of
// n and an hour's grace, whose leases ran out a second ago for those
// cutOff says, and hold for a minute more for the rest.
func outagePool(n int, cutOff func(i int) bool) *Pool {
	p := &Pool{log: slog.New(slog.DiscardHandler)}
	at := now()
	for i := range n {
		m := &Machine{pool: p, name: fmt.Sprintf("m%02d", i), log: p.log, attempts: make(map[client.AttemptRef]*attempt)}
		m.started.Store(true)
		m.lease.position.Store(int32(i + 1))
		m.lease.poolSize.Store(int32(n))
		m.lease.grace.Store(int64(time.Hour))
		if cutOff(i) {
			m.lease.deadline.Store(int64(at - time.Second))
		} else {
			m.lease.deadline.Store(int64(at + time.Minute))
		}
		p.ms = append(p.ms, m)
	}
	return p
}

// A machine whose lease ran out keeps its restartable work while most of
// its pool says theirs ran out too, and stops it otherwise, as a stub
// does; a machine whose lease holds is left alone.
func TestSimulatedMachinesRideOutOnlyAMajorityOutage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cutOff func(int) bool
		riding bool
	}{
		{"3 of 5 cut off", func(i int) bool { return i < 3 }, true},
		{"2 of 5 cut off", func(i int) bool { return i < 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := outagePool(5, tc.cutOff)
			p.coverRound(now())
			at := now()
			for i, m := range p.ms {
				m.checkLease(at)
				cut := tc.cutOff(i)
				if riding, stopped := m.lease.riding.Load(), m.lease.stopped.Load(); riding != (cut && tc.riding) || stopped != (cut && !tc.riding) {
					t.Errorf("%s (cut off %v): riding %v, stopped %v", m.name, cut, riding, stopped)
				}
			}
			// The cover lapses when no round renews it.
			later := at + client.OutageCoverFor + time.Millisecond
			for i, m := range p.ms {
				m.checkLease(later)
				if cut := tc.cutOff(i); m.lease.stopped.Load() != cut {
					t.Errorf("%s (cut off %v) after the cover lapsed: stopped %v", m.name, cut, m.lease.stopped.Load())
				}
			}
		})
	}
}

// A tally counts a range's live machines that say their leases ran out,
// each within the pool it knows, and a statement says so from vouchWithin
// before the lease's end.
func TestSimulatedTally(t *testing.T) {
	p := outagePool(6, func(i int) bool { return i%2 == 0 })
	p.ms[1].lease.deadline.Store(int64(now() + p.ms[1].vouchWithin()/2)) // about to run out
	p.ms[4].dead.Store(true)
	got := p.tally(now(), "", "")
	if want := (client.OutageTally{Expired: 3, Pool: 6, Answered: 5}); got != want {
		t.Errorf("whole pool: tally %+v, want %+v", got, want)
	}
	got = p.tally(now(), "m01", "m03")
	if want := (client.OutageTally{Expired: 2, Pool: 6, Answered: 3}); got != want {
		t.Errorf("m01..m03: tally %+v, want %+v", got, want)
	}
}

// A pool split over processes covers as one: a round adds the tallies of
// the other processes' witnesses (outage peers, over HTTP) to its own, so
// 3 of 6 machines cut off here and 1 of the other process's 3 make a
// majority that neither process sees alone.
func TestSimulatedPoolSplitOverProcessesCoversAsOne(t *testing.T) {
	split := func(n int, cut func(int) bool) *Pool {
		p := outagePool(n, cut)
		p.ctx = context.Background()
		for _, m := range p.ms {
			m.lease.poolSize.Store(6)
		}
		return p
	}
	other := split(3, func(i int) bool { return i == 0 })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/outage/witness" {
			http.NotFound(w, r)
			return
		}
		handleOutageWitness(other.ms[0], w, r)
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name    string
		peers   [][]OutagePeer
		covered bool
	}{
		{"alone", nil, false},
		// The other process's first machine is dead (nothing listens):
		// its second answers.
		{"with the other process", [][]OutagePeer{{{Name: "m00", Addr: deadAddr(t)}, {Name: "m01", Addr: srv.Listener.Addr().String()}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := split(3, func(int) bool { return true })
			if err := p.SetOutagePeers(tc.peers); err != nil {
				t.Fatal(err)
			}
			roundCovers(t, p, tc.covered)
		})
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A large pool comes back from an outage over about two renewal
// intervals (each machine's retry wait, and the leader hearing the whole
// pool at its scaled rate), each machine then renewing every interval:
// the machines back first must go on vouching until the last is back,
// or the last lose their cover and stop. At 10,000 machines' 3 s
// interval, twenty machines returning one by one over 6 s all keep their
// work when those back vouch client.OutageVouchAfterFor the interval (12 s);
// with a fixed client.OutageVouchAfter (2 s) the first half stopped
// vouching 4.7 s in, the cover lapsed 0.8 s later, and the last came
// back to stopped work.
func TestSimulatedPoolBackOverTwoIntervalsKeepsItsWork(t *testing.T) {
	const (
		n     = 20
		every = client.MaxRenewEvery
		lease = 2*every + 2*time.Second
		step  = 100 * time.Millisecond
	)
	for _, tc := range []struct {
		name      string
		vouch     time.Duration
		wantStops bool
	}{
		{"vouching for the interval", client.OutageVouchAfterFor(every), false},
		{"vouching a fixed 2 s", client.OutageVouchAfter, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := outagePool(n, func(int) bool { return true })
			for _, m := range p.ms {
				m.lease.renewEvery.Store(int64(every))
			}
			start := now()
			back := func(i int) time.Duration { return start + time.Duration(i)*2*every/n }
			renewed := make([]time.Duration, n) // the last renewal, 0 before
			stopped := map[string]time.Duration{}
			for at := start; at <= back(n-1)+2*time.Second; at += step {
				for i, m := range p.ms {
					due := renewed[i] == 0 && back(i) <= at || renewed[i] != 0 && renewed[i]+every <= at
					if !due {
						continue
					}
					// A renewal as keepLease takes it: one sent while
					// the lease ran out vouches, then the deadline moves.
					if m.runsOut(at) {
						m.lease.vouchUntil.Store(int64(at + tc.vouch))
					}
					m.lease.deadline.Store(int64(at + lease))
					renewed[i] = at
				}
				p.coverRound(at)
				for _, m := range p.ms {
					m.checkLease(at)
					if _, ok := stopped[m.name]; !ok && m.lease.stopped.Load() {
						stopped[m.name] = at - start
					}
				}
			}
			t.Logf("machines stopped (name: when, after the first was back): %v", stopped)
			if got := len(stopped) > 0; got != tc.wantStops {
				t.Errorf("%d machines stopped; want stops: %v", len(stopped), tc.wantStops)
			}
		})
	}
}

// The other processes have a stub's whole answer time: a process that
// answers its tally 0.3 s late (a simulator starved of CPU while the
// servers come back) still makes the majority with this one, and one
// that answers past client.OutageAnswerWithin does not, as a stub takes
// no answer that late.
func TestSimulatedPoolPeerAnswersWithinTheAnswerTime(t *testing.T) {
	for _, tc := range []struct {
		delay   time.Duration
		covered bool
	}{
		{300 * time.Millisecond, true},
		{client.OutageAnswerWithin + 200*time.Millisecond, false},
	} {
		t.Run(tc.delay.String(), func(t *testing.T) {
			other := outagePool(3, func(i int) bool { return i == 0 })
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(tc.delay)
				handleOutageWitness(other.ms[0], w, r)
			}))
			defer srv.Close()
			p := outagePool(3, func(int) bool { return true })
			p.ctx = context.Background()
			for _, m := range append(p.ms, other.ms...) {
				m.lease.poolSize.Store(6)
			}
			if err := p.SetOutagePeers([][]OutagePeer{{{Name: "m00", Addr: srv.Listener.Addr().String()}}}); err != nil {
				t.Fatal(err)
			}
			roundCovers(t, p, tc.covered)
		})
	}
}

// roundCovers runs one witness round of p now and checks that it covers
// each of p's machines, or none, as want says.
func roundCovers(t *testing.T, p *Pool, want bool) {
	t.Helper()
	began := now()
	p.coverRound(began)
	for _, m := range p.ms {
		if covered := m.lease.coveredUntil.Load() > int64(began); covered != want {
			t.Errorf("%s: covered %v, want %v", m.name, covered, want)
		}
	}
}
