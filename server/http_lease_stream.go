package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
)

// The lease stream's limits (client.LeaseStreamPath).
const (
	// leaseStreamIdle ends a stream on which nothing arrived for this
	// long. A stub keeps a stream open with each server, idle but for the
	// leader's (client's lease_standby.go), so this is long; a stub that
	// is gone without a word is found sooner by TCP's keep-alives.
	leaseStreamIdle = 30 * time.Minute
	// leaseStreamMinGap is the least time between two renewals on one
	// stream: a stub renews every LeaseRenewInterval, and at once when an
	// answer asks for its facts; one that sends faster waits, so that a
	// stream costs the leader no more than plain requests under the rate
	// limit would.
	leaseStreamMinGap = 20 * time.Millisecond
	// leaseStreamMaxFrame bounds one renewal, as decodeBody bounds a
	// request's body.
	leaseStreamMaxFrame = 1 << 20
	// leaseStreamWriteWithin bounds one answer's write on an upgraded
	// stream: a stub that reads nothing for this long is gone.
	leaseStreamWriteWithin = 10 * time.Second
)

// errLeaseStreamFrame is a renewal line longer than leaseStreamMaxFrame.
var errLeaseStreamFrame = errors.New("lease stream: renewal longer than 1 MiB")

// handleLeaseStream takes a stub's renewals on one long-lived request:
// each line of the body is a LeaseRequest, granted as handleLease grants
// one (grantLease: a leadership check begun after the line arrived, then
// the lease table), and answered with a line of the answer. The stub's
// certificate, checked once when the stream opens, must name the machine
// of every renewal. Any server takes a stream: while it does not lead it
// passes each renewal to the leader and answers with the leader's grant
// (lease_relay.go), or 503, and keeps the stream, which a stub holds open
// with every server so that a new leader needs no new connection
// (client's lease_standby.go); once it leads it grants them. The stream
// ends when the server stops, after leaseStreamIdle without a line, or at
// the first malformed line or renewal for another machine.
//
// A request over HTTP/1.1 that asks to upgrade to client.LeaseUpgrade
// gets the connection to itself, and the lines go on it bare: no HTTP/2
// frames, flow control or goroutine per write between a renewal and its
// answer (at 1,600 machines at rest, HTTP/2's serving loop and frame
// writers were about a third of the leader's CPU). A stub that predates
// it streams within HTTP/2 as before.
func (s *Server) handleLeaseStream(w http.ResponseWriter, r *http.Request) {
	machine, ok := s.requireStub(w, r, "")
	if !ok {
		return
	}
	if r.ProtoMajor == 1 && strings.EqualFold(r.Header.Get("Upgrade"), client.LeaseUpgrade) {
		s.serveLeaseUpgrade(w, r, machine)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex() // HTTP/1.1 only; HTTP/2 always is
	w.Header().Set("Content-Type", "application/x-ndjson")
	s.nameLeader(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	s.serveLeaseLines(r.Context(), machine, leaseLines{
		in: bufio.NewReaderSize(r.Body, 4096),
		send: func(line []byte) error {
			if _, err := w.Write(line); err != nil {
				return err
			}
			return rc.Flush()
		},
		readBy: rc.SetReadDeadline,
	})
}

// serveLeaseUpgrade upgrades the connection of r to client.LeaseUpgrade
// and hands it to a goroutine of its own, which serves the lease stream
// on it and closes it, and returns. The stream outlives the request:
// its goroutine begins with a small stack and not beneath net/http's
// serving loop and the handler chain, so an idle stream's stack shrinks
// at the next collection to what a read needs (at 10,000 machines at
// rest, handler goroutines parked mid-stream held 234 MB of stacks,
// ~23 KB each). Like a hijacked connection's handler before it, the
// goroutine is not one the HTTP server's Shutdown waits for; the
// server's context ends it (serveLeaseLines).
func (s *Server) serveLeaseUpgrade(w http.ResponseWriter, r *http.Request, machine string) {
	conn, err := client.AcceptUpgradeTo(w, client.LeaseUpgrade)
	if err != nil {
		s.log.Debug("lease stream upgrade failed", "machine", machine, "err", err)
		return
	}
	go s.serveLeaseConn(conn, machine)
}

// serveLeaseConn serves a lease stream of machine's stub on conn, an
// upgraded connection, and closes it.
func (s *Server) serveLeaseConn(conn net.Conn, machine string) {
	defer conn.Close()
	s.serveLeaseLines(s.ctx, machine, leaseLines{
		// A renewal is a few hundred bytes; a longer line is read in
		// pieces (readLeaseLine). At 2,000 machines 4 KB readers were
		// 8 MB of the leader's 94 MB live heap.
		in: bufio.NewReaderSize(conn, 512),
		send: func(line []byte) error {
			// A stub that stops reading holds no handler for long.
			_ = conn.SetWriteDeadline(time.Now().Add(leaseStreamWriteWithin))
			_, err := conn.Write(line)
			return err
		},
		readBy: conn.SetReadDeadline,
	})
}

// leaseLines is one lease stream's ends, whatever carries them: the
// renewals' reader, a send that writes and flushes one answer's line
// (newline included), and the reader's deadline.
type leaseLines struct {
	in     *bufio.Reader
	send   func(line []byte) error
	readBy func(time.Time) error
}

// serveLeaseLines answers the renewals of l, from machine's stub, until
// the stream ends; ctx is the stream's (a request's, or the server's for
// an upgraded connection).
func (s *Server) serveLeaseLines(ctx context.Context, machine string, l leaseLines) {
	s.leaseStreams.Add(1)
	defer s.leaseStreams.Add(-1)
	// Stop reading at once when the server stops: its Shutdown waits for
	// handlers (and closes no upgraded connection), and this one would
	// otherwise wait for the next renewal. The deadline is set under mu,
	// never after the stream ended nor later than the server stopped.
	var mu sync.Mutex
	over := false
	readBy := func(t time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if s.ctx.Err() != nil {
			t = time.Now()
		}
		if !over {
			_ = l.readBy(t)
		}
	}
	stop := context.AfterFunc(s.ctx, func() { readBy(time.Now()) })
	defer func() {
		stop()
		mu.Lock()
		over = true
		mu.Unlock()
	}()
	var last time.Time
	var buf []byte
	for {
		if s.ctx.Err() != nil {
			return
		}
		readBy(time.Now().Add(leaseStreamIdle))
		line, err := readLeaseLine(l.in)
		if err != nil {
			if errors.Is(err, errLeaseStreamFrame) {
				_ = l.send(appendLeaseStreamAnswer(nil, client.LeaseStreamAnswer{Status: http.StatusBadRequest, Error: err.Error()}))
			}
			return
		}
		if wait := leaseStreamMinGap - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		arrival := time.Now()
		last = arrival
		answer, relayed, end := s.leaseStreamAnswer(ctx, &machine, arrival, line)
		if relayed == nil {
			buf = appendLeaseStreamAnswer(buf[:0], answer)
			relayed = buf
		}
		if err := l.send(relayed); err != nil || end {
			return
		}
	}
}

// leaseStreamAnswer grants the renewal in line, which arrived at arrival
// on a stream of machine's stub, as the leadership in office now (after
// holding it up to leaseHold for a leader to be known), or passes it to
// the leader another server is (lease_relay.go) and returns the leader's
// answer line as relayed, or answers 503 naming the leader, and says
// whether the stream ends after the answer: at a malformed renewal or one
// for another machine. Without TLS (no certificate names the machine) the
// stream is bound to the machine of its first renewal.
func (s *Server) leaseStreamAnswer(ctx context.Context, machine *string, arrival time.Time, line []byte) (answer client.LeaseStreamAnswer, relayed []byte, end bool) {
	var req client.LeaseRequest
	if err := decodeLeaseRequest(line, &req); err != nil {
		return client.LeaseStreamAnswer{Status: http.StatusBadRequest, Error: fmt.Sprintf("read lease request: %v", err)}, nil, true
	}
	if *machine == "" {
		*machine = req.Machine
	}
	if req.Machine != *machine {
		err := fmt.Errorf("lease stream: renewal for machine %s: the stream is machine %s's (%w)", req.Machine, *machine, errPermission)
		return client.LeaseStreamAnswer{Status: http.StatusForbidden, Error: err.Error()}, nil, true
	}
	st := s.leader.Load()
	if st == nil {
		// Held, as a plain renewal is (leaseHold), while no leader is
		// known: a stub whose leader died asks a stream that waited here.
		s.awaitLeader(ctx, leaseHold)
		if st = s.leader.Load(); st == nil {
			if s.raft.State() != raft.Leader && s.leaderKnown() {
				if relayed, ok := s.relay.pass(ctx, line); ok {
					return client.LeaseStreamAnswer{}, relayed, false
				}
			}
			a := client.LeaseStreamAnswer{Status: http.StatusServiceUnavailable, Error: errNotLeader.Error()}
			if _, addr, err := s.leaderHTTP(); err == nil && s.raft.State() != raft.Leader {
				a.Leader = addr
			}
			return a, nil, false
		}
	}
	resp, status, err := s.grantLease(ctx, st, arrival, req)
	if err != nil {
		// A leadership that could not be confirmed answers 503 too, and
		// keeps the stream; a commit that failed otherwise ends it.
		return client.LeaseStreamAnswer{Status: status, Error: err.Error()}, nil, status >= 500 && status != http.StatusServiceUnavailable
	}
	s.metrics.leaseRenewals.WithLabelValues("stream").Inc()
	return client.LeaseStreamAnswer{Status: http.StatusOK, Lease: &resp}, nil, false
}

// readLeaseLine reads one renewal, a line of at most leaseStreamMaxFrame
// bytes, without its newline.
func readLeaseLine(in *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := in.ReadSlice('\n')
		if len(line)+len(chunk) > leaseStreamMaxFrame {
			return nil, errLeaseStreamFrame
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}
