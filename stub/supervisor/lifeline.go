package supervisor

import (
	"encoding/json"
	"log/slog"
	"net"
	"sync"
)

// hostNotice is what a supervisor host pushes on every lifeline once an
// attempt's result is written: the attempt's directory and its result.
type hostNotice struct {
	Dir    string `json:"dir"`
	Result Result `json:"result"`
}

// lifeline is the stub's connection to its supervisor host. Held open, it
// keeps the host running; the host pushes on it a hostNotice for each job
// that ends, which saves the stub a connection per attempt to wait on.
// The push is a fast path only: should the lifeline break, the stub asks
// for each result on the host's socket as it does for an attempt it
// reattached to.
type lifeline struct {
	conn net.Conn
	log  *slog.Logger

	mu      sync.Mutex             // guards waiters and broken
	waiters map[string]chan Result // by attempt directory
	broken  bool                   // no notice comes any more
}

// newLifeline starts reading the host's notices on conn.
func newLifeline(conn net.Conn, log *slog.Logger) *lifeline {
	ll := &lifeline{conn: conn, log: log, waiters: make(map[string]chan Result)}
	go ll.read()
	return ll
}

// expect returns the channel that brings the result of the attempt of
// dir, which is about to start. The channel is closed without a result
// if the lifeline breaks first.
func (ll *lifeline) expect(dir string) <-chan Result {
	ch := make(chan Result, 1)
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if ll.broken {
		close(ch)
		return ch
	}
	ll.waiters[dir] = ch
	return ch
}

// unexpect forgets the attempt of dir, which did not start.
func (ll *lifeline) unexpect(dir string) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	delete(ll.waiters, dir)
}

// read hands each notice to the attempt that expects it until the
// lifeline breaks or is closed, then closes the channels still waiting.
func (ll *lifeline) read() {
	dec := json.NewDecoder(ll.conn)
	for {
		var n hostNotice
		if err := dec.Decode(&n); err != nil {
			break
		}
		ll.mu.Lock()
		ch := ll.waiters[n.Dir]
		delete(ll.waiters, n.Dir)
		ll.mu.Unlock()
		if ch != nil {
			ch <- n.Result
		}
	}
	ll.mu.Lock()
	defer ll.mu.Unlock()
	ll.broken = true
	for dir, ch := range ll.waiters {
		close(ch)
		delete(ll.waiters, dir)
	}
}

// isBroken reports whether the lifeline has broken: no notice comes on
// it any more.
func (ll *lifeline) isBroken() bool {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	return ll.broken
}

// close lets go of the host.
func (ll *lifeline) close() {
	if err := ll.conn.Close(); err != nil {
		ll.log.Debug("close the supervisor host's lifeline", "err", err)
	}
}
