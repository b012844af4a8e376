package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// A pass owing more requests than sendSlots keeps at most sendSlots in
// flight and sends the rest as answers free their slots: a job of a
// thousand instances, one a machine, no longer has the leader dial a
// thousand stubs at once.
func TestDispatchBoundsRequestsInFlight(t *testing.T) {
	const batches = sendSlots + 8
	stub := newFakeStub(t, 0)
	stub.hold = make(chan struct{})
	t.Cleanup(func() { close(stub.hold) }) // a failed test's held requests end before the stub closes
	p := newDispatchPool(t, stub, func(p *dispatchPool) { p.cpus = batches * startBatchMax })
	for range batches {
		p.place(startBatchMax)
	}
	p.d.Dispatch(context.Background())
	held := func() (int, int) {
		stub.mu.Lock()
		defer stub.mu.Unlock()
		return stub.inflight, len(stub.batches)
	}
	for answered := 0; answered < batches; answered++ {
		want := min(sendSlots, batches-answered)
		testwait.Until(t, 10*time.Second, fmt.Sprintf("%d requests held after %d answered", want, answered), func() (bool, string) {
			n, done := held()
			return n == want && done == answered, fmt.Sprintf("%d held, %d answered", n, done)
		})
		stub.hold <- struct{}{}
	}
	p.d.Wait()
	stub.mu.Lock()
	most := stub.most
	stub.mu.Unlock()
	if most != sendSlots {
		t.Errorf("at most %d requests were in flight at once, want %d", most, sendSlots)
	}
	if acked, failed := p.states(); acked != batches*startBatchMax || failed != 0 {
		t.Errorf("got %d starts acknowledged and %d failed, want %d and 0", acked, failed, batches*startBatchMax)
	}
}
