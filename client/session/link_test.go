package session

import (
	"bytes"
	"crypto/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// pump sends data through a in frames of type typ, then a FrameExit.
func pump(t *testing.T, l *Link, typ byte, data []byte) {
	t.Helper()
	for len(data) > 0 {
		n := min(len(data), MaxData)
		if err := l.Send(Frame{Type: typ, Data: data[:n]}); err != nil {
			t.Errorf("send: %v", err)
			return
		}
		data = data[n:]
	}
	if err := l.Send(Exit{Code: 3}.Frame()); err != nil {
		t.Errorf("send exit: %v", err)
	}
}

// collect takes frames of l until a FrameExit and returns their bytes.
func collect(t *testing.T, l *Link) []byte {
	t.Helper()
	var got []byte
	for {
		f, err := l.Recv()
		if err != nil {
			t.Errorf("recv: %v", err)
			return got
		}
		if f.Type == FrameResize {
			continue
		}
		if f.Type == FrameExit {
			e, err := ExitOf(f)
			if err != nil || e.Code != 3 {
				t.Errorf("exit = %+v, %v; want code 3", e, err)
			}
			return got
		}
		got = append(got, f.Data...)
	}
}

// TestLinkResumesAcrossConnections cuts the connection under a Link pair
// again and again while 8 MB go each way, and checks that every byte
// arrives once and in order.
func TestLinkResumesAcrossConnections(t *testing.T) {
	t.Parallel()
	a, b := NewLink(256<<10), NewAcceptorLink(256<<10)
	up := make([]byte, 8<<20)
	down := make([]byte, 8<<20)
	_, _ = rand.Read(up)
	_, _ = rand.Read(down)
	var wg sync.WaitGroup
	var gotUp, gotDown []byte
	wg.Go(func() { pump(t, a, FrameStdin, up) })
	wg.Go(func() { pump(t, b, FrameStdout, down) })
	wg.Go(func() { gotUp = collect(t, b) })
	wg.Go(func() { gotDown = collect(t, a) })
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	cuts := 0
	for {
		ca, cb := net.Pipe()
		errs := make(chan error, 2)
		go func() { errs <- a.Serve(ca) }()
		go func() { errs <- b.Serve(cb) }()
		select {
		case <-finished:
			a.Close()
			b.Close()
			<-errs
			<-errs
			if !bytes.Equal(gotUp, up) || !bytes.Equal(gotDown, down) {
				t.Fatalf("after %d cuts: up %d/%d bytes equal=%v, down %d/%d equal=%v", cuts,
					len(gotUp), len(up), bytes.Equal(gotUp, up), len(gotDown), len(down), bytes.Equal(gotDown, down))
			}
			if cuts < 3 {
				t.Fatalf("only %d cuts happened; the test cut nothing mid-stream", cuts)
			}
			return
		default:
		}
		// Let some bytes through each way, then cut.
		a.mu.Lock()
		fromA, fromB := a.peerTook, a.took
		a.mu.Unlock()
		testwait.Poll(5*time.Second, func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.closed || (a.peerTook > fromA+300<<10 && a.took > fromB+300<<10) ||
				(len(a.out) == 0 && a.took > fromB+300<<10) || len(a.queue) > 0 && a.took >= uint64(len(down))
		})
		select {
		case <-finished:
		default:
			_ = a.Send(Resize(24, 80)) // a frame cut in the middle, perhaps
		}
		a.Detach()
		<-errs
		<-errs
		cuts++
	}
}

// TestFreshDialerTakesOverSession leaves a session with one client and
// attaches another that knows nothing of it (netmgr attach): it reads
// what the first did not take, and its input reaches the acceptor.
func TestFreshDialerTakesOverSession(t *testing.T) {
	t.Parallel()
	first, stub := NewLink(0), NewAcceptorLink(0)
	ca, cb := net.Pipe()
	go func() { _ = first.Serve(ca) }()
	go func() { _ = stub.Serve(cb) }()
	if err := first.Send(Frame{Type: FrameStdin, Data: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := stub.Send(Frame{Type: FrameStdout, Data: []byte("one")}); err != nil {
		t.Fatal(err)
	}
	if f, err := first.Recv(); err != nil || string(f.Data) != "one" {
		t.Fatalf("first client got %q, %v; want one", f.Data, err)
	}
	if f, err := stub.Recv(); err != nil || string(f.Data) != "hello" {
		t.Fatalf("stub got %q, %v; want hello", f.Data, err)
	}
	if !first.WaitAcked() {
		t.Fatal("the first client's acknowledgement did not go")
	}
	testwait.For(t, 5*time.Second, "the stub's log drained", stub.Drained)
	first.Close()
	if err := stub.Send(Frame{Type: FrameStdout, Data: []byte("two")}); err != nil {
		t.Fatal(err)
	}

	second := NewLink(0)
	ca, cb = net.Pipe()
	go func() { _ = second.Serve(ca) }()
	go func() { _ = stub.Serve(cb) }()
	if f, err := second.Recv(); err != nil || string(f.Data) != "two" {
		t.Fatalf("second client got %q, %v; want two (and not one, which the first took)", f.Data, err)
	}
	if err := second.Send(Frame{Type: FrameStdin, Data: []byte("again")}); err != nil {
		t.Fatal(err)
	}
	if f, err := stub.Recv(); err != nil || string(f.Data) != "again" {
		t.Fatalf("stub got %q, %v from the second client; want again", f.Data, err)
	}
	second.Close()
	stub.Close()
}
