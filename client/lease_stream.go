package client

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The lease stream's timing on the stub's side (LeaseStreamPath).
const (
	// leaseStreamPatience bounds the wait for one renewal's answer on a
	// stream, or for a stream's opening, when the client has no leader
	// patience (WithLeaderPatience): past it the renewal goes by a plain
	// request with the rest of its time, and the stream is kept, owing
	// that answer, which the next renewal on it reads first; a stream that
	// does not deliver it within the next patience is dropped, its server
	// being gone or stuck, not slow, and that renewal's plain request asks
	// the other servers first.
	leaseStreamPatience = 500 * time.Millisecond
	// leaseStreamRetry is how long after a stream could not be opened, or
	// broke, the client opens none: meanwhile it renews on the streams
	// waiting with the other servers (lease_standby.go), or by plain
	// requests, which find the new leader after an election.
	leaseStreamRetry = 2 * time.Second
	// leaseStreamSpread is how many renewal intervals, at most, a client
	// whose stream broke or whose leader moved waits on top of
	// leaseStreamRetry, at random, before it opens a stream with the new
	// leader: a stream is a connection of its own (LeaseUpgrade), and
	// 10,000 stubs opening theirs at once would be 10,000 handshakes in
	// the new leader's first seconds. A stream that waited with the new
	// leader needs no opening; without one, they renew by plain requests
	// meanwhile.
	leaseStreamSpread = 10
)

// WithLeaseStream makes RenewLease renew on a lease stream
// (LeaseStreamPath) with the leader, once an answer named the leader and
// said it takes one (LeaseResponse.Streams), and by plain requests
// otherwise: before the first answer, and when no stream reaches the
// leader. A renewal costs the leader a few frames on the stream instead
// of a whole request. With WithWarmConnections it also keeps a stream
// waiting with each other server (lease_standby.go).
func WithLeaseStream() Option { return func(c *Client) { c.leases = &leaseStreams{} } }

// leaseStreams is a client's lease stream, when it has one, and the
// streams it keeps open with the other servers (lease_standby.go).
type leaseStreams struct {
	mu       sync.Mutex // held for a renewal on the stream, and guards the fields
	cur      *leaseStream
	standby  map[string]*leaseStream // idle streams with servers that do not lead, by URL
	failed   string                  // the server whose stream failed last, and when
	failedAt time.Time
	offered  bool          // the last plain answer said its server takes a stream
	retryAt  time.Time     // no stream is opened before this
	renew    time.Duration // the renewal interval the last answer gave
	// opening holds the servers with which a stream is being opened in
	// the background (openPatiently), and opens is the context of those
	// opens, which CloseLeaseStream ends (stopOpens).
	opening   map[string]bool
	opens     context.Context
	stopOpens context.CancelFunc
	// via is the URL of the server the leader last named to renew on
	// (LeaseResponse.RenewVia), "" for the leader itself; none is taken
	// before viaRetryAt, set when a stream with the one named failed or
	// its relay did.
	via        string
	viaRetryAt time.Time
}

// leaseViaRetry is how long after a renewal on the stream with the
// server the leader named (LeaseResponse.RenewVia) failed the client
// renews with the leader instead.
const leaseViaRetry = 30 * time.Second

// renewVia records the server an answer names to renew on, with scheme
// (LeaseResponse.RenewVia); under ls.mu.
func (ls *leaseStreams) renewVia(scheme string, resp LeaseResponse) {
	ls.via = ""
	if resp.RenewVia != "" {
		ls.via = scheme + resp.RenewVia
	}
}

// target is the URL of the server whose stream takes the next renewal,
// with the leader's base: the one the leader named, unless its stream or
// relay failed lately, else the leader; under ls.mu.
func (ls *leaseStreams) target(base string, now time.Time) string {
	if ls.via == "" || ls.via == base || now.Before(ls.viaRetryAt) || ls.failedLately(ls.via) {
		return base
	}
	return ls.via
}

// viaFailed makes the client renew with the leader for leaseViaRetry,
// when from, whose stream failed or answered 503, is the server the
// leader named; under ls.mu.
func (ls *leaseStreams) viaFailed(from string, now time.Time) {
	if from != "" && from == ls.via {
		ls.viaRetryAt = now.Add(leaseViaRetry)
	}
}

// hold makes the client open no stream for leaseStreamRetry and a random
// part of leaseStreamSpread intervals; under ls.mu.
func (ls *leaseStreams) hold(now time.Time) {
	wait := leaseStreamRetry
	if spread := leaseStreamSpread * ls.renew; spread > 0 {
		wait += rand.N(spread)
	}
	ls.retryAt = now.Add(wait)
}

// leaseStream is one open lease stream.
type leaseStream struct {
	base    string // the server's URL
	out     io.WriteCloser
	answers chan streamRead // the answers, in order, as read
	owed    bool            // the answer to a renewal given up on is still to come
	body    io.Closer
	cancel  context.CancelFunc
}

// streamRead is one answer read from a lease stream, or the error that
// ended the stream.
type streamRead struct {
	answer LeaseStreamAnswer
	err    error
}

// read passes each answer on the stream to s.answers until the stream
// ends, then the error that ended it.
func (s *leaseStream) read(in *bufio.Reader) {
	for {
		data, err := in.ReadBytes('\n')
		if err != nil {
			s.answers <- streamRead{err: fmt.Errorf("read lease stream %s: %w", s.base, err)}
			return
		}
		var r streamRead
		if err := json.Unmarshal(data, &r.answer); err != nil {
			s.answers <- streamRead{err: fmt.Errorf("decode lease stream %s: %w", s.base, err)}
			return
		}
		s.answers <- r
	}
}

func (s *leaseStream) close() {
	s.cancel()
	_ = s.out.Close()
	_ = s.body.Close()
}

// errStreamSlow is a renewal whose answer did not come within the
// client's patience; the stream still owes it. errStreamStuck is a stream
// that owed an answer and did not give it within the next patience.
// errStreamNotLeader is an answer from a server that no longer leads.
var (
	errStreamSlow      = errors.New("lease stream: no answer within the patience")
	errStreamStuck     = errors.New("lease stream: an answer owed did not come")
	errStreamNotLeader = errors.New("lease stream: the server does not lead")
	// errStreamLeaderNamed is errStreamNotLeader from a server that named
	// the leader, with which the client has no stream waiting: the plain
	// request goes to the leader first.
	errStreamLeaderNamed = errors.New("lease stream: the server named another leader")
)

// renewOnStream renews on the client's lease stream with the known
// leader: the one it has, else one that waited open with that server
// (lease_standby.go), else a new one. With no stream with the leader
// known (it died, or none is known), a waiting stream with another
// server takes the renewal instead: that server holds it until a leader
// is elected, grants it if it leads, or names the leader, whose waiting
// stream then takes it. done is true with a retryable error when the
// servers asked knew of no leader after holding it, held it past the
// round, all said they do not lead, or named as leader the one whose
// stream just failed: a plain request would fare no better, and the next
// renewal asks again. done is false when the renewal should go by a
// plain request instead: with a nil error when there is no stream;
// errStreamSlow when this renewal's answer was late (the stream is
// kept); errStreamLeaderNamed when a server named a leader with which no
// stream waits (the plain request goes there first); else the error of a
// stream that could not be opened, failed or is stuck (it is dropped,
// none is opened for leaseStreamRetry, and the plain request does not
// wait on its server first).
func (c *Client) renewOnStream(ctx context.Context, req LeaseRequest) (resp LeaseResponse, done bool, err error) {
	ls := c.leases
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c.mu.Lock()
	base, known := "", c.leaderKnown && c.preferred < len(c.addrs)
	if known {
		base = c.addrs[c.preferred]
	}
	c.mu.Unlock()
	if known {
		// The stream the leader named, which relays to it, if any.
		base = ls.target(base, time.Now())
	}
	if ls.cur != nil && ls.cur.base != base {
		// The leader moved, as an answer or gossip said, or named another
		// server to renew on: the stream waits for its server to lead (or
		// to be named) again, and the new one's waiting stream, if any,
		// carries the renewals from now on.
		ls.keepStandby(ls.cur)
		ls.cur = nil
		ls.hold(time.Now())
	}
	if ls.cur == nil && known {
		ls.cur = ls.takeStandby(base)
	}
	patience := c.streamPatience(ctx)
	failingOver := false // the renewal went to a stream but the leader's
	if ls.cur == nil && (!known || time.Now().Before(ls.retryAt)) {
		if ls.cur = ls.takeAnyStandby(""); ls.cur != nil {
			patience, failingOver = failOverPatience(ctx, patience), true
		}
	}
	if ls.cur == nil {
		if !known || !ls.offered || time.Now().Before(ls.retryAt) {
			return LeaseResponse{}, false, nil
		}
		if ls.cur, err = c.openPatiently(ctx, base); err != nil {
			ls.cur = nil
			ls.hold(time.Now())
			return LeaseResponse{}, false, err
		}
	}
	if !failingOver && ls.cur.base == ls.via {
		// A relaying server holds a renewal through an election as the
		// survivors do when failing over: a plain request would be held
		// as long (at 3,000 simulated machines whose leader was killed,
		// those plain requests were ~1,000 handshakes with the survivors).
		patience, failingOver = failOverPatience(ctx, patience), true
	}
	for tries := 1; ; tries++ {
		answer, err := c.leaseOnStream(ctx, ls.cur, req, patience)
		if err == nil && answer.Status == http.StatusOK && answer.Lease != nil {
			ls.renew = time.Duration(answer.Lease.RenewMS) * time.Millisecond
			ls.renewVia(c.scheme, *answer.Lease)
			if !answer.Lease.Relayed {
				c.leaderIs(ls.cur.base)
			} else if answer.Leader != "" {
				c.leaderIs(c.scheme + answer.Leader)
			}
			return *answer.Lease, true, nil
		}
		if errors.Is(err, errStreamSlow) {
			if failingOver {
				// Held for an election that outlasts the round: the
				// stream waits on, owing the answer, and a plain request
				// would be held as long.
				ls.keepStandby(ls.cur)
				ls.cur = nil
				return LeaseResponse{}, true, &retryable{msg: fmt.Sprintf("renew lease: %v (held for an election)", err)}
			}
			return LeaseResponse{}, false, err // kept: a slow leader is not a dead one
		}
		if err == nil && answer.Status >= 400 && answer.Status < 500 {
			// The server ends the stream after such an answer.
			ls.cur.close()
			ls.cur = nil
			return LeaseResponse{}, true, &APIError{Status: answer.Status, Message: answer.Error}
		}
		var next *leaseStream
		if err == nil && answer.Status == http.StatusServiceUnavailable {
			// The server does not lead; it keeps the stream open, which
			// waits for it to lead again (a server that predates this
			// ends it, which the next look at it finds). The leader it
			// names, if any, may have a stream waiting too; if it knew
			// of none after holding the renewal for an election, another
			// server may.
			from := ls.cur.base
			ls.viaFailed(from, time.Now())
			ls.keepStandby(ls.cur)
			ls.cur = nil
			err = errStreamNotLeader
			named := ""
			if answer.Leader != "" {
				named = c.scheme + answer.Leader
			}
			switch {
			case named != "" && ls.failedLately(named):
				// The leader named is the one whose stream just failed:
				// the server has not yet noticed it die. The next
				// renewal asks again, after the election.
				return LeaseResponse{}, true, &retryable{msg: fmt.Sprintf("renew lease on a stream with %s: it names %s, whose stream failed", from, answer.Leader)}
			case named != "":
				c.leaderIs(named)
				if next = ls.takeStandby(named); next == nil {
					err = errStreamLeaderNamed
				}
			default:
				// No leader known, even after the server held the
				// renewal (an election, or a relay whose leader died):
				// the streams waiting with the others carry the
				// renewals meanwhile, and none is opened with the
				// leader the client last knew, which may be dead.
				ls.hold(time.Now())
				if next = ls.takeAnyStandby(from); next == nil {
					// A plain request would be held for a leader as
					// long, with less of the round left: the next
					// renewal asks.
					return LeaseResponse{}, true, &retryable{msg: fmt.Sprintf("renew lease on a stream with %s: %s", from, answer.Error)}
				}
			}
		} else {
			// The stream failed (its server died, or stopped): another
			// server's waiting stream may reach the leader at once.
			ls.cur.close()
			ls.hold(time.Now())
			ls.viaFailed(ls.cur.base, time.Now())
			ls.failed, ls.failedAt = ls.cur.base, time.Now()
			err = cmp.Or(err, errStreamStuck)
			next = ls.takeAnyStandby("")
		}
		ls.cur, failingOver = next, true
		if next == nil || tries == failOverTries {
			if next != nil {
				ls.keepStandby(next)
				ls.cur = nil
			}
			if errors.Is(err, errStreamNotLeader) {
				// Every server asked said it does not lead: a plain
				// request would ask the same ones. The next renewal does.
				return LeaseResponse{}, true, &retryable{msg: fmt.Sprintf("renew lease: %d servers' streams said they do not lead", tries)}
			}
			return LeaseResponse{}, false, err
		}
		patience = failOverPatience(ctx, patience)
	}
}

// streamPatience is how long one renewal, or the opening of a stream,
// may take before the renewal goes by a plain request instead.
func (c *Client) streamPatience(ctx context.Context) time.Duration {
	if p := c.patienceFor(ctx); p > 0 {
		return p
	}
	return leaseStreamPatience
}

// leaseOnStream sends req on s and waits for its answer, first reading
// the one s owes, if any. It gives up once within has passed (the
// client's patience, streamPatience, or longer: failOverPatience) or ctx
// has ended: with errStreamSlow, the stream then owing this
// renewal's answer, or with errStreamStuck when the answer owed did not
// come. A stream whose server does not even read what is sent is broken
// after twice within.
func (c *Client) leaseOnStream(ctx context.Context, s *leaseStream, req LeaseRequest, within time.Duration) (LeaseStreamAnswer, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return LeaseStreamAnswer{}, fmt.Errorf("encode lease request: %w", err)
	}
	patience := time.NewTimer(within)
	defer patience.Stop()
	wait := func(late error) (streamRead, error) {
		select {
		case r := <-s.answers:
			if r.err != nil {
				s.answers <- r // for whoever reads next: the stream is over
			}
			return r, r.err
		case <-patience.C:
			return streamRead{}, late
		case <-ctx.Done():
			return streamRead{}, late
		}
	}
	if s.owed {
		if _, err := wait(errStreamStuck); err != nil {
			return LeaseStreamAnswer{}, err
		}
		s.owed = false
	}
	stuck := time.AfterFunc(2*within, s.cancel)
	_, err = s.out.Write(append(line, '\n'))
	if !stuck.Stop() || err != nil {
		return LeaseStreamAnswer{}, fmt.Errorf("send on lease stream %s: %w", s.base, cmp.Or(err, context.Canceled))
	}
	s.owed = true
	r, err := wait(errStreamSlow)
	if err != nil {
		return LeaseStreamAnswer{}, err
	}
	s.owed = false
	return r.answer, nil
}

// openLeaseStream opens a lease stream with the server at base, waiting
// at most within, or until ctx ends, for its answer: on a connection of
// its own upgraded to LeaseUpgrade when the client's transport is an
// *http.Transport, else within a request.
func (c *Client) openLeaseStream(ctx context.Context, base string, within time.Duration) (*leaseStream, error) {
	if t, ok := c.hc.Transport.(*http.Transport); ok {
		return c.upgradeLeaseStream(ctx, t, base, within)
	}
	return c.requestLeaseStream(ctx, base, within)
}

// upgradeLeaseStream opens a lease stream on a connection of its own,
// made as t makes its connections and upgraded to LeaseUpgrade.
func (c *Client) upgradeLeaseStream(ctx context.Context, t *http.Transport, base string, within time.Duration) (*leaseStream, error) {
	octx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	id := &http.Request{Header: make(http.Header)}
	c.setIdentity(id)
	conn, err := DialUpgradeTo(octx, t, http.MethodPost, base+LeaseStreamPath, id.Header, c.expect, LeaseUpgrade)
	if err != nil {
		return nil, fmt.Errorf("open lease stream %s: %w", base, err)
	}
	s := &leaseStream{base: base, out: conn, answers: make(chan streamRead, 2), body: conn,
		cancel: func() { _ = conn.Close() }}
	go s.read(bufio.NewReader(conn))
	return s, nil
}

// requestLeaseStream opens a lease stream within a request whose body
// carries the renewals and whose answer's body carries the answers.
func (c *Client) requestLeaseStream(ctx context.Context, base string, within time.Duration) (*leaseStream, error) {
	sctx, cancel := context.WithCancel(context.Background()) // the stream outlives ctx
	pr, pw := io.Pipe()
	rctx := sctx
	if c.expect != nil {
		rctx = context.WithValue(sctx, expectKey{}, *c.expect)
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, base+LeaseStreamPath, pr)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open lease stream %s: %w", base, err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	c.setIdentity(req)
	hc := *c.hc
	hc.Timeout = 0 // the stream lasts until closed
	late := time.AfterFunc(within, cancel)
	stop := context.AfterFunc(ctx, cancel)
	resp, err := hc.Do(req)
	late.Stop()
	stop()
	if err != nil {
		cancel()
		_ = pw.Close()
		return nil, fmt.Errorf("open lease stream %s: %w", base, err)
	}
	s := &leaseStream{base: base, out: pw, answers: make(chan streamRead, 2), body: resp.Body, cancel: cancel}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		s.close()
		return nil, fmt.Errorf("open lease stream %s: %s: %s", base, resp.Status, strings.TrimSpace(string(msg)))
	}
	if c.expect != nil && resp.TLS != nil {
		if err := checkPeer(resp.TLS, *c.expect, base); err != nil {
			s.close()
			return nil, err
		}
	}
	go s.read(bufio.NewReader(resp.Body))
	return s, nil
}

// CloseLeaseStream ends the client's lease streams, the leader's and the
// waiting ones, and its warming (WithWarmConnections): for a stub that stops renewing. A later
// RenewLease may open another.
func (c *Client) CloseLeaseStream() {
	c.stopWarming()
	if c.leases == nil {
		return
	}
	c.leases.mu.Lock()
	defer c.leases.mu.Unlock()
	if c.leases.stopOpens != nil {
		c.leases.stopOpens() // the opens under way close what they open
		c.leases.opens, c.leases.stopOpens, c.leases.opening = nil, nil, nil
	}
	if c.leases.cur != nil {
		c.leases.cur.close()
		c.leases.cur = nil
	}
	for base, s := range c.leases.standby {
		s.close()
		delete(c.leases.standby, base)
	}
}
