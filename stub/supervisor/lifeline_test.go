package stub

import (
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// A lifeline hands each notice to the attempt expecting it, ignores the
// others, and closes what still waits once it breaks.
func TestLifelineNotices(t *testing.T) {
	stubEnd, hostEnd := net.Pipe()
	ll := newLifeline(stubEnd, slog.New(slog.DiscardHandler))
	first, second := ll.expect("/a/1.0.1"), ll.expect("/a/2.0.1")
	enc := json.NewEncoder(hostEnd)
	for _, n := range []hostNotice{
		{Dir: "/a/9.0.1", Result: supervisorResult{ExitCode: 9}}, // started by an earlier stub
		{Dir: "/a/1.0.1", Result: supervisorResult{ExitCode: 1}},
	} {
		if err := enc.Encode(n); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case res := <-first:
		if res.ExitCode != 1 {
			t.Errorf("result of 1.0.1 = %+v, want exit 1", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no result for 1.0.1")
	}

	_ = hostEnd.Close()
	select {
	case res, ok := <-second:
		if ok {
			t.Fatalf("result of 2.0.1 = %+v after the lifeline broke, want the channel closed", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("2.0.1 still waits on a broken lifeline")
	}
	if !ll.isBroken() {
		t.Error("the lifeline does not know it broke")
	}
	if _, ok := <-ll.expect("/a/3.0.1"); ok {
		t.Error("a broken lifeline promised a result")
	}
}

// The host pushes each result on the lifeline. Should the lifeline break
// while a job runs, its end is still reported, asked for on the host
// socket, and the next start holds a new lifeline.
func TestHostPushFallsBack(t *testing.T) {
	srv := newFakeServer(t, 0)
	r := newRestartable(t, srv, NoCgroups)
	c := stubClient(t, r.s)
	pushed := func(k attemptKey) bool {
		r.s.runner.mu.Lock()
		defer r.s.runner.mu.Unlock()
		return r.s.runner.attempts[k].ended != nil
	}
	release := func(req client.StartRequest) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(r.execDir(keyOf(req)), "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if term := srv.waitTerm(t, keyOf(req)); term[len(term)-1].ExitCode != 3 {
			t.Errorf("TERM of %s = %+v, want exit 3", keyOf(req), term[len(term)-1])
		}
	}

	start := func(job uint64) client.StartRequest {
		t.Helper()
		req := gatedJob(job)
		mustStart(t, c, req)
		killOnCleanup(t, waitRegister(t, srv, keyOf(req)))
		return req
	}
	held := func() *lifeline {
		r.s.runner.host.mu.Lock()
		defer r.s.runner.host.mu.Unlock()
		return r.s.runner.host.lifeline
	}

	first := start(1)
	if !pushed(keyOf(first)) {
		t.Fatal("the attempt waits on a connection of its own, want the lifeline's push")
	}
	release(first)

	second := start(2)
	ll := held()
	_ = ll.conn.Close() // broken behind the client's back
	waitFor(t, "the lifeline to break", ll.isBroken)
	release(second)

	third := start(3)
	if next := held(); next == ll || next.isBroken() {
		t.Fatal("the next start did not hold a new lifeline")
	}
	if !pushed(keyOf(third)) {
		t.Fatal("the next attempt gets no push")
	}
	release(third)
}
