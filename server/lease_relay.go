package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
)

// Lease renewals relayed by the followers. Past a few thousand machines
// the leader's own cost at rest is its lease streams: a TLS record and a
// system call each way for each of some 3,300 renewals a second (at
// 2,000 machines at rest, 67% of the leader's CPU, half of it in the
// kernel and crypto/tls), and on a loaded host the goroutines they wake
// queue ahead of Raft's heartbeat answers. So from Config.LeaseRelayFrom
// machines the leader names in each answer a follower
// (LeaseResponse.RenewVia, the machine's hash over the servers of the
// Raft configuration that gossip shows alive; one that comes back takes
// its share over a minute, lease_relay_via.go), the stub renews on the
// stream it already keeps with that follower (client's lease_standby.go),
// and the follower passes what its streams take to the leader in batches
// over one connection (client.LeaseRelayPath): one batch in flight at a
// time, the renewals that arrive meanwhile going in the next, so a batch
// holds what arrived during the last round trip. The leader grants each
// exactly as it grants a renewal on its own stream (grantLease: a
// leadership check begun after the batch arrived, so after the renewal
// was sent), and its answer goes back to the stub unchanged but marked
// Relayed. The relay is only a slower network: a lease counts from when
// the stub sent its renewal, never from an arrival.
//
// When the leader dies, the followers' streams stay open: the survivor
// elected grants its stubs' renewals itself and the other relays to it,
// so no stub dials the new leader. A follower that cannot reach the
// leader answers 503, naming no leader (a stub then tries its other
// streams, then renews again at its next interval); a leader that
// predates the relay (404) is named, and the stub goes to it directly.

// DefaultLeaseRelayFrom is `netmgr server`'s --lease-relay-from: at 1,000
// machines renewing every 0.5 s a leader takes 2,000 renewals a second
// on as many sockets, a quarter of a core on this project's 2-core test
// host; below it a renewal goes straight to the leader, a hop shorter.
const DefaultLeaseRelayFrom = 1000

// The relay's limits.
const (
	// relayBatchMax bounds one batch's renewals.
	relayBatchMax = 1000
	// relayWithin bounds one batch's round trip: a renewal waits this
	// long at most for its answer (the stub's patience is shorter, and it
	// then renews otherwise).
	relayWithin = 2 * time.Second
	// relayMaxBody bounds a batch's body and its answer: renewals and
	// answers are a few hundred bytes each.
	relayMaxBody = 64 << 20
	// relayViaEvery is how often the leader looks again at which servers
	// it names in RenewVia.
	relayViaEvery = time.Second
)

// leaseRelay is a server's queue of renewals to pass to the leader.
type leaseRelay struct {
	mu      sync.Mutex // guards pending
	pending []*relayedRenewal
	kick    chan struct{} // cap 1: pending is not empty
}

// relayedRenewal is one renewal line waiting for the leader's answer.
type relayedRenewal struct {
	line   []byte
	answer chan []byte // cap 1: the answer's line, newline included
}

func newLeaseRelay() *leaseRelay { return &leaseRelay{kick: make(chan struct{}, 1)} }

// pass queues line for the next batch and waits for its answer line, or
// until ctx ends (false).
func (r *leaseRelay) pass(ctx context.Context, line []byte) ([]byte, bool) {
	rr := &relayedRenewal{line: line, answer: make(chan []byte, 1)}
	r.mu.Lock()
	r.pending = append(r.pending, rr)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	select {
	case a := <-rr.answer:
		return a, true
	case <-ctx.Done():
		return nil, false
	}
}

// take removes and returns up to relayBatchMax of the pending renewals,
// in arrival order.
func (r *leaseRelay) take() []*relayedRenewal {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.pending), relayBatchMax)
	batch := slices.Clone(r.pending[:n])
	if n == len(r.pending) {
		r.pending = nil
	} else {
		r.pending = r.pending[n:]
	}
	return batch
}

// relayLeases sends the queued renewals to the leader, a batch at a time,
// until the server stops.
func (s *Server) relayLeases() {
	for {
		select {
		case <-s.ctx.Done():
			for _, rr := range s.relay.take() {
				rr.answer <- relayFailed("", errors.New("the server is stopping"))
			}
			return
		case <-s.relay.kick:
		}
		for batch := s.relay.take(); len(batch) > 0; batch = s.relay.take() {
			s.relayBatch(batch)
		}
	}
}

// relayBatch passes batch to the leader and answers each renewal in it:
// with the leader's answer, or a 503 when the batch failed. A leader that
// could not be reached (it died, and no election has yet noticed) is
// waited out as a server that knows of no leader holds a renewal (up to
// leaseHold): once another leader is known the batch goes to it, or is
// granted here if this server was elected. Answered 503 at once, every
// stub whose leader was killed asked its other streams and then, knowing
// no stream with a live leader, dialled the survivors for plain requests:
// ~900 handshakes at 3,000 simulated machines.
func (s *Server) relayBatch(batch []*relayedRenewal) {
	answers, named, err := s.sendRelay(batch)
	var gone *leaderUnreached
	if len(answers) == 0 && errors.As(err, &gone) && s.awaitOtherLeader(gone.addr, leaseHold) {
		if st := s.leader.Load(); st != nil {
			answers, named, err = s.grantHere(st, batch), "", nil
		} else {
			answers, named, err = s.sendRelay(batch)
		}
	}
	for i, rr := range batch {
		if i < len(answers) {
			rr.answer <- answers[i]
		} else {
			rr.answer <- relayFailed(named, err)
		}
	}
	if err != nil {
		s.log.Debug("lease relay failed", "renewals", len(batch), "answered", len(answers), "err", err)
	}
}

// relayFailed is the answer line to a renewal the relay could not pass
// on: 503, naming leader when the stub should go to it directly.
func relayFailed(leader string, err error) []byte {
	return appendLeaseStreamAnswer(nil, client.LeaseStreamAnswer{Status: http.StatusServiceUnavailable,
		Error: fmt.Sprintf("relay renewal: %v", err), Leader: leader})
}

// sendRelay posts batch to the leader and returns its answer lines, in
// order, up to the first it could not read; with fewer than the batch,
// the error, and the leader's address when the stub should go to it
// directly (a leader that predates the relay).
func (s *Server) sendRelay(batch []*relayedRenewal) (answers [][]byte, named string, err error) {
	if s.raft.State() == raft.Leader {
		return nil, "", fmt.Errorf("this server leads: %w", errNotLeader)
	}
	name, addr, err := s.leaderHTTP()
	if err != nil {
		return nil, "", err
	}
	var body bytes.Buffer
	for _, rr := range batch {
		body.Write(rr.line)
		body.WriteByte('\n')
	}
	ctx, cancel := context.WithTimeout(s.ctx, relayWithin)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.scheme()+addr+client.LeaseRelayPath, &body)
	if err != nil {
		return nil, "", fmt.Errorf("relay to leader %s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set(forwardedHeader, s.cfg.Name)
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, "", &leaderUnreached{addr: addr, err: fmt.Errorf("relay to leader %s: %w", name, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		err := fmt.Errorf("relay to leader %s: %s: %s", name, resp.Status, bytes.TrimSpace(msg))
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return nil, addr, err
		}
		return nil, "", err
	}
	in := bufio.NewReader(io.LimitReader(resp.Body, relayMaxBody))
	answers = make([][]byte, 0, len(batch))
	for range batch {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return answers, "", fmt.Errorf("relay to leader %s: read answer %d of %d: %w", name, len(answers)+1, len(batch), err)
		}
		answers = append(answers, line)
	}
	return answers, "", nil
}

// leaderUnreached is a relay that found no leader at addr: no connection,
// or none that answered.
type leaderUnreached struct {
	addr string
	err  error
}

func (e *leaderUnreached) Error() string { return e.err.Error() }
func (e *leaderUnreached) Unwrap() error { return e.err }

// awaitOtherLeader waits, up to hold, until this server leads in office or
// Raft names a leader other than the one at addr, and reports whether it
// does.
func (s *Server) awaitOtherLeader(addr string, hold time.Duration) bool {
	timer := time.NewTimer(hold)
	defer timer.Stop()
	for {
		news := s.news.next()
		if s.leader.Load() != nil {
			return true
		}
		if _, now, err := s.leaderHTTP(); err == nil && now != addr && s.raft.State() != raft.Leader {
			return true
		}
		select {
		case <-news:
		case <-timer.C:
			return false
		case <-s.ctx.Done():
			return false
		}
	}
}

// grantHere grants, as leadership st, the renewals a relay held for a
// leader when this server was elected, and returns their answer lines.
func (s *Server) grantHere(st *leaderState, batch []*relayedRenewal) [][]byte {
	arrival := time.Now()
	answers := make([][]byte, len(batch))
	var wg sync.WaitGroup
	for i, rr := range batch {
		wg.Go(func() {
			a := s.grantLine(s.ctx, st, arrival, rr.line)
			if a.Lease != nil {
				s.metrics.leaseRenewals.WithLabelValues("stream").Inc()
			}
			answers[i] = appendLeaseStreamAnswer(nil, a)
		})
	}
	wg.Wait()
	return answers
}

// handleLeaseRelay grants, on the leader, the renewals a follower's lease
// streams took (client.LeaseRelayPath): each as grantLease grants one,
// all at once, answered in order.
func (s *Server) handleLeaseRelay(w http.ResponseWriter, r *http.Request) {
	if !s.requireServer(w, r) {
		return
	}
	arrival := time.Now()
	st := s.leader.Load()
	if st == nil {
		s.writeError(w, http.StatusServiceUnavailable, errNotLeader)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, relayMaxBody))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read relayed renewals: %w", err))
		return
	}
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	if len(body) == 0 {
		lines = nil
	}
	if len(lines) > relayBatchMax {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read relayed renewals: %d, at most %d a batch", len(lines), relayBatchMax))
		return
	}
	// Granted side by side, as on the stubs' own streams: the first to
	// ask starts the leadership check, and a renewal that commits (a
	// machine reachable again) holds up no other.
	answers := make([]client.LeaseStreamAnswer, len(lines))
	var wg sync.WaitGroup
	for i, line := range lines {
		wg.Go(func() { answers[i] = s.relayedAnswer(r.Context(), st, arrival, line) })
	}
	wg.Wait()
	var out []byte
	for _, a := range answers {
		out = appendLeaseStreamAnswer(out, a)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	s.nameLeader(w)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// relayedAnswer grants one relayed renewal as leadership st, marked
// relayed and naming this server as the leader.
func (s *Server) relayedAnswer(ctx context.Context, st *leaderState, arrival time.Time, line []byte) client.LeaseStreamAnswer {
	a := s.grantLine(ctx, st, arrival, line)
	if a.Lease != nil {
		a.Lease.Relayed, a.Leader = true, s.httpLn.Addr().String()
		s.metrics.leaseRenewals.WithLabelValues("relay").Inc()
	}
	return a
}

// grantLine grants the renewal in line, which arrived at arrival, as
// leadership st; its machine has been checked against the stub's
// certificate where the stream was taken.
func (s *Server) grantLine(ctx context.Context, st *leaderState, arrival time.Time, line []byte) client.LeaseStreamAnswer {
	var req client.LeaseRequest
	if err := decodeLeaseRequest(line, &req); err != nil {
		return client.LeaseStreamAnswer{Status: http.StatusBadRequest, Error: fmt.Sprintf("read lease request: %v", err)}
	}
	resp, status, err := s.grantLease(ctx, st, arrival, req)
	if err != nil {
		return client.LeaseStreamAnswer{Status: status, Error: err.Error()}
	}
	return client.LeaseStreamAnswer{Status: http.StatusOK, Lease: &resp}
}
