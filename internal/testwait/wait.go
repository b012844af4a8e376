package testwait

import (
	"testing"
	"time"
)

// The polling interval starts at firstEvery, so a condition that holds
// soon is seen soon, and grows by half each round up to maxEvery, so a
// long wait does not spin a loaded machine (a condition is often an HTTP
// call or a read of a cluster's state).
const (
	firstEvery = 10 * time.Millisecond
	maxEvery   = 100 * time.Millisecond
)

// For calls cond until it returns true, first at once and then every 10
// to 100 ms, and returns. When timeout passes first, it fails t with
// "timed out after TIMEOUT waiting for WHAT". It blocks the calling
// goroutine, which must be the test's own (t.Fatalf ends it); cond runs
// on that goroutine too, so it may call t.Fatalf itself.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, timeout, what, func() (bool, string) { return cond(), "" })
}

// Until is For for a condition that also says what it saw: cond returns
// whether it holds and a short description of the state it found (a
// count, a status, a log's tail). When timeout passes first, the failure
// message ends with the last description, so a timed-out test says where
// it stood.
func Until(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, last := poll(timeout, cond); !ok {
		if last == "" {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		t.Fatalf("timed out after %v waiting for %s (last seen: %s)", timeout, what, last)
	}
}

// Poll calls cond as For does and returns true once it holds, or false
// when timeout passes first, without failing anything: for a test that
// reports the miss itself (t.Errorf with its own details) and goes on.
func Poll(timeout time.Duration, cond func() bool) bool {
	ok, _ := poll(timeout, func() (bool, string) { return cond(), "" })
	return ok
}

// poll is the one loop: it checks cond, sleeps a growing interval, and
// gives up after timeout with cond's last description. cond is always
// called at least once, and once more at or after the deadline, so a
// condition that became true during the last sleep is not missed.
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	every := firstEvery
	for {
		ok, last := cond()
		if ok {
			return true, last
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, last
		}
		time.Sleep(min(every, left))
		every = min(every*3/2, maxEvery)
	}
}

// Holds is the other side of For: it calls cond over span, first at once
// and then every 10 to 100 ms, and fails t with "WHAT stopped holding
// after ELAPSED" the first time cond returns false; otherwise it returns
// when span has passed (so it always blocks for span when all is well).
// It is for what must not happen while a test watches (an attempt
// restarted, a machine put to sleep); cond may call t.Fatalf itself with
// a more precise message.
func Holds(t testing.TB, span time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	if ok, _ := poll(span, func() (bool, string) { return !cond(), "" }); ok {
		t.Fatalf("%s stopped holding after %v", what, time.Since(start).Round(time.Millisecond))
	}
}
