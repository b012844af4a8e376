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
	msgHello = 'H' // recv u64, consumed u64: where the sender of it stands in the peer's log
	msgData  = 'D' // offset u64, length u32, bytes: a piece of the sender's log
	msgAck   = 'A' // consumed u64: how much of the peer's log the sender's application took
)

// Defaults of a Link.
const (
	// Window is how many bytes of its log a Link sends beyond what the
	// peer's application has taken: the most the peer queues unread.
	Window = 1 << 20
	// maxChunk bounds the bytes of one data message.
	maxChunk = 64 << 10
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
}

// NewLink returns a Link whose log holds up to buffer unacknowledged bytes
// (DefaultBuffer when buffer is 0) before Send blocks.
func NewLink(buffer int) *Link {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	l := &Link{bufMax: buffer}
	l.cond = sync.NewCond(&l.mu)
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
	hello := make([]byte, 17)
	hello[0] = msgHello
	binary.BigEndian.PutUint64(hello[1:], l.recv)
	binary.BigEndian.PutUint64(hello[9:], l.took)
	l.ackSent = l.took
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

	// Both ends write first: a connection without a buffer (net.Pipe)
	// needs the reading to go on meanwhile.
	wrote := make(chan error, 1)
	go func() {
		_, err := conn.Write(hello)
		wrote <- err
	}()
	r := bufio.NewReaderSize(conn, maxChunk+32)
	var peer [17]byte
	_, err := io.ReadFull(r, peer[:])
	if err != nil {
		_ = conn.Close()
	}
	if werr := <-wrote; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("session hello: %w", err)
	}
	if peer[0] != msgHello {
		return fmt.Errorf("session hello: %w: message %q", ErrProtocol, peer[0])
	}
	peerRecv := binary.BigEndian.Uint64(peer[1:])
	peerTook := binary.BigEndian.Uint64(peer[9:])
	l.mu.Lock()
	end := l.outBase + uint64(len(l.out))
	if peerRecv < l.outBase || peerRecv > end || peerTook > peerRecv {
		l.mu.Unlock()
		return fmt.Errorf("session hello: %w: the peer has %d of a log of %d whose first %d were acknowledged", ErrProtocol, peerRecv, end, l.outBase)
	}
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
