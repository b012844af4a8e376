package supervisor

import (
	"encoding/json"
	"log/slog"
	"net"
	"testing"
	"time"
)

// A lifeline hands each notice to the attempt expecting it, ignores the
// others, and closes what still waits once it breaks.
func TestLifelineNotices(t *testing.T) {
	stubEnd, hostEnd := net.Pipe()
	ll := newLifeline(stubEnd, slog.New(slog.DiscardHandler))
	first, second := ll.expect("/a/1.0.1"), ll.expect("/a/2.0.1")
	enc := json.NewEncoder(hostEnd)
	for _, n := range []hostNotice{
		{Dir: "/a/9.0.1", Result: Result{ExitCode: 9}}, // started by an earlier stub
		{Dir: "/a/1.0.1", Result: Result{ExitCode: 1}},
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
