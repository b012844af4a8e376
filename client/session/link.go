package session

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Wire messages, each a type byte then fixed fields.
const (
	msgHello = 'H' // flags u8, recv u64, took u64, base u64: where the sender stands (type hello)
	msgData  = 'D' // offset u64, length u32, bytes: a piece of the sender's log
	msgAck   = 'A' // consumed u64: how much of the peer's log the sender's application took
)

// Defaults of a Link.
const (
	// Window is how many bytes of its log a Link sends beyond what the
	// peer's application has taken: the most the peer queues unread.
	Window = 4 << 20
	// maxChunk bounds the bytes of one data message.
	maxChunk = 256 << 10
	// DefaultBuffer is how many unacknowledged bytes a Link's log holds
	// before Send blocks.
	DefaultBuffer = 4 << 20
)

// A Link is one end of a session: an ordered log of frames it sends and
// the frames it received of the peer's log. The log outlives any one
// connection: Serve runs it over a connection until that breaks, and a
// later Serve over another connection resumes where both ends stand, so
// no byte is lost, repeated or reordered. A Link is safe for concurrent
// use; one Serve runs at a time (a new one ends the last).
type Link struct {
	bufMax int

	serveMu sync.Mutex // held by the Serve that runs

	mu   sync.Mutex // guards everything below
	cond *sync.Cond
	// out holds the log bytes [outBase, outBase+len(out)) the peer's
	// application has not acknowledged.
	out     []byte
	outBase uint64
	// peerTook is the peer's consumed offset as last acknowledged.
	peerTook uint64
	// recv is the length of the peer's log received; inbuf the received
	// bytes not yet parsed into frames, queue the parsed frames not yet
	// taken, took the offset just past the last frame taken.
	recv    uint64
	inbuf   []byte
	queue   []Frame
	took    uint64
	ackSent uint64 // the last consumed offset sent to the peer
	cur     io.Closer
	curGen  uint64
	closed  bool
	// acceptor is set on the end that accepts connections (the stub):
	// it hears the dialer's hello before it sends its own.
	acceptor bool
	greeted  bool // a hello has been exchanged once
}

// hello is where one end stands: how much of the peer's log it received
// and took, and the first byte of its own log it still holds. fresh marks
// a dialer that never greeted: it takes the session as the acceptor has
// it.
type hello struct {
	fresh            bool
	recv, took, base uint64
}

const helloSize = 26

func (h hello) encode() []byte {
	b := make([]byte, helloSize)
	b[0] = msgHello
	if h.fresh {
		b[1] = 1
	}
	binary.BigEndian.PutUint64(b[2:], h.recv)
	binary.BigEndian.PutUint64(b[10:], h.took)
	binary.BigEndian.PutUint64(b[18:], h.base)
	return b
}

// readHello reads the peer's hello.
func readHello(r io.Reader) (hello, error) {
	var b [helloSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return hello{}, err
	}
	if b[0] != msgHello {
		return hello{}, fmt.Errorf("%w: message %q", ErrProtocol, b[0])
	}
	return hello{
		fresh: b[1]&1 != 0,
		recv:  binary.BigEndian.Uint64(b[2:]),
		took:  binary.BigEndian.Uint64(b[10:]),
		base:  binary.BigEndian.Uint64(b[18:]),
	}, nil
}

// greet returns this end's hello; an acceptor greeting a fresh dialer
// first drops the part of a frame its last dialer left unfinished, so the
// new one's log starts on a frame.
func (l *Link) greet(peer hello) hello {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acceptor && peer.fresh {
		l.recv -= uint64(len(l.inbuf))
		l.inbuf = nil
	}
	l.ackSent = l.took
	return hello{fresh: !l.acceptor && !l.greeted, recv: l.recv, took: l.took, base: l.outBase}
}

// NewLink returns the dialing end of a session (the client) whose log
// holds up to buffer unacknowledged bytes (DefaultBuffer when buffer is
// 0) before Send blocks. Its first Serve takes the session as the
// acceptor has it, so a new client can attach to a session another
// client left (netmgr attach).
func NewLink(buffer int) *Link {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	l := &Link{bufMax: buffer}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// NewAcceptorLink returns the accepting end of a session (the stub's), as
// NewLink does the dialing end.
func NewAcceptorLink(buffer int) *Link {
	l := NewLink(buffer)
	l.acceptor = true
	return l
}

// Send appends a frame to the log. It blocks while the log holds more
// than its buffer that the peer has not acknowledged, and fails with
// ErrClosed once the Link is closed.
func (l *Link) Send(f Frame) error {
	b := f.encode()
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && len(l.out) > 0 && len(l.out)+len(b) > l.bufMax {
		l.cond.Wait()
	}
	if l.closed {
		return ErrClosed
	}
	l.out = append(l.out, b...)
	l.cond.Broadcast()
	return nil
}

// Recv returns the next frame of the peer's log, blocking until one has
// come; it fails with ErrClosed once the Link is closed and every frame
// received is taken.
func (l *Link) Recv() (Frame, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.queue) == 0 && !l.closed {
		l.cond.Wait()
	}
	if len(l.queue) == 0 {
		return Frame{}, ErrClosed
	}
	f := l.queue[0]
	l.queue[0] = Frame{}
	l.queue = l.queue[1:]
	l.took += uint64(f.size())
	l.cond.Broadcast() // the sender has an acknowledgement to send
	return f, nil
}

// Drained reports whether the peer has acknowledged the whole log.
func (l *Link) Drained() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.out) == 0
}

// WaitDrained blocks until the peer has acknowledged the whole log or the
// Link is closed; it reports whether the log was drained.
func (l *Link) WaitDrained() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.out) > 0 && !l.closed {
		l.cond.Wait()
	}
	return len(l.out) == 0
}

// WaitAcked blocks until every frame taken with Recv has been acknowledged
// on the connection that Serve runs, or the Link is closed or has no
// connection; it reports whether the acknowledgement went.
func (l *Link) WaitAcked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.ackSent < l.took && !l.closed && l.cur != nil {
		l.cond.Wait()
	}
	return l.ackSent >= l.took
}

// Close ends the Link: its connection is closed, Send and Recv fail.
func (l *Link) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.cur != nil {
		_ = l.cur.Close()
	}
	l.cond.Broadcast()
}

// Detach closes the connection Serve runs on, if any, leaving the Link
// to be served again.
func (l *Link) Detach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		_ = l.cur.Close()
	}
}

// Serve runs the Link over conn until conn breaks or the Link is closed,
// then closes conn and returns why. It first ends the Serve that runs, if
// any. Both ends exchange where they stand in each other's log, then each
// sends what the other lacks and goes on sending as frames come.
func (l *Link) Serve(conn io.ReadWriteCloser) error {
	l.mu.Lock()
	if l.cur != nil {
		_ = l.cur.Close()
	}
	l.mu.Unlock()
	l.serveMu.Lock()
	defer l.serveMu.Unlock()

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = conn.Close()
		return ErrClosed
	}
	l.cur = conn
	l.curGen++
	gen := l.curGen
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		if l.curGen == gen {
			l.cur = nil
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		_ = conn.Close()
	}()

	r := bufio.NewReaderSize(conn, maxChunk+32)
	var peer hello
	var err error
	if l.acceptor {
		// The dialer speaks first, so that a dialer that comes fresh
		// (netmgr attach) is known before this end says where it stands.
		if peer, err = readHello(r); err == nil {
			_, err = conn.Write(l.greet(peer).encode())
		}
	} else {
		if _, err = conn.Write(l.greet(hello{}).encode()); err == nil {
			peer, err = readHello(r)
		}
	}
	if err != nil {
		return fmt.Errorf("session hello: %w", err)
	}
	l.mu.Lock()
	if !l.acceptor && !l.greeted {
		// A fresh dialer takes the session as the acceptor has it: its
		// log goes on from what the acceptor received, and it reads the
		// acceptor's from the first byte still held there.
		l.recv, l.took, l.ackSent = peer.base, peer.base, peer.base
		l.outBase, l.peerTook = peer.recv, peer.recv
	}
	peerRecv, peerTook := peer.recv, peer.took
	if peer.fresh {
		peerRecv, peerTook = l.outBase, l.outBase
	}
	end := l.outBase + uint64(len(l.out))
	if peerRecv < l.outBase || peerRecv > end || peerTook > peerRecv {
		l.mu.Unlock()
		return fmt.Errorf("session hello: %w: the peer has %d of a log of %d whose first %d were acknowledged", ErrProtocol, peerRecv, end, l.outBase)
	}
	l.greeted = true
	l.ackedTo(peerTook)
	l.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- l.send(conn, gen, peerRecv) }()
	err = l.read(r)
	_ = conn.Close()
	l.mu.Lock()
	if l.curGen == gen {
		l.cur = nil // the sender stops
	}
	l.cond.Broadcast()
	l.mu.Unlock()
	<-done // the reading's error says why: the sending's follows from it
	return err
}

// ackedTo drops the log bytes before off, which the peer has taken.
// l.mu is held.
func (l *Link) ackedTo(off uint64) {
	if off <= l.outBase {
		return
	}
	n := min(off-l.outBase, uint64(len(l.out)))
	l.out = l.out[n:]
	if len(l.out) == 0 {
		l.out = nil
	}
	l.outBase += n
	l.peerTook = max(l.peerTook, off)
	l.cond.Broadcast()
}

// send writes the log from pos, and acknowledgements, on conn while gen
// is the connection served.
func (l *Link) send(conn io.Writer, gen, pos uint64) error {
	w := bufio.NewWriterSize(conn, maxChunk+64)
	var hdr [13]byte
	for {
		l.mu.Lock()
		for {
			if l.closed || l.curGen != gen || l.cur == nil {
				l.mu.Unlock()
				return nil
			}
			end := l.outBase + uint64(len(l.out))
			if (pos < end && pos < l.peerTook+Window) || l.ackSent < l.took {
				break
			}
			l.cond.Wait()
		}
		var chunk []byte
		end := min(l.outBase+uint64(len(l.out)), l.peerTook+Window, pos+maxChunk)
		at := pos
		if pos < end {
			chunk = append(chunk, l.out[pos-l.outBase:end-l.outBase]...)
			pos = end
		}
		ack := l.took
		sendAck := l.ackSent < ack
		l.ackSent = ack
		l.cond.Broadcast()
		l.mu.Unlock()
		if len(chunk) > 0 {
			hdr[0] = msgData
			binary.BigEndian.PutUint64(hdr[1:], at)
			binary.BigEndian.PutUint32(hdr[9:], uint32(len(chunk)))
			_, _ = w.Write(hdr[:13])
			_, _ = w.Write(chunk)
		}
		if sendAck {
			hdr[0] = msgAck
			binary.BigEndian.PutUint64(hdr[1:], ack)
			_, _ = w.Write(hdr[:9])
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("session send: %w", err)
		}
	}
}

// read takes messages from r until it fails.
func (l *Link) read(r *bufio.Reader) error {
	var hdr [12]byte
	buf := make([]byte, maxChunk)
	for {
		typ, err := r.ReadByte()
		if err != nil {
			return readErr(err)
		}
		switch typ {
		case msgAck:
			if _, err := io.ReadFull(r, hdr[:8]); err != nil {
				return readErr(err)
			}
			l.mu.Lock()
			l.ackedTo(binary.BigEndian.Uint64(hdr[:8]))
			l.mu.Unlock()
		case msgData:
			if _, err := io.ReadFull(r, hdr[:12]); err != nil {
				return readErr(err)
			}
			off := binary.BigEndian.Uint64(hdr[:8])
			n := binary.BigEndian.Uint32(hdr[8:])
			if n > maxChunk {
				return fmt.Errorf("session read: %w: a data message of %d bytes", ErrProtocol, n)
			}
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				return readErr(err)
			}
			if err := l.received(off, buf[:n]); err != nil {
				return err
			}
		default:
			return fmt.Errorf("session read: %w: message %q", ErrProtocol, typ)
		}
	}
}

// received adds the piece of the peer's log at off to what came.
func (l *Link) received(off uint64, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off > l.recv {
		return fmt.Errorf("session read: %w: data at %d, after a gap from %d", ErrProtocol, off, l.recv)
	}
	skip := l.recv - off
	if skip >= uint64(len(b)) {
		return nil // a repeat
	}
	b = b[skip:]
	l.recv += uint64(len(b))
	l.inbuf = append(l.inbuf, b...)
	for {
		f, n, err := decodeFrame(l.inbuf)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		l.queue = append(l.queue, f)
		l.inbuf = l.inbuf[n:]
	}
	if len(l.inbuf) == 0 {
		l.inbuf = nil
	}
	l.cond.Broadcast()
	return nil
}

// readErr names a broken connection.
func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("session read: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("session read: %w", err)
}
