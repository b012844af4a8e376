package client

import "time"

// leaseRetryFloor is how soon a stub of a small pool tries again after a
// renewal failed: its renewal interval, half a second.
const leaseRetryFloor = 500 * time.Millisecond

// LeaseRetryWait is how long a stub that renews every `every` waits, at
// random (Jittered), before it tries again after a renewal that failed:
// half a second in a pool small enough to renew that often, two thirds
// of the interval in a larger one (2 s at 10,000 machines). A pool whose
// leader died then asks the surviving servers about as often as it
// renews, one round each; a stub has 2 s plus a whole interval of its
// lease left at the death (the lease is twice the interval plus 2 s:
// server/lease's TimingFor), so a new leader elected within a second is
// found with one retry to spare.
func LeaseRetryWait(every time.Duration) time.Duration {
	return Jittered(max(min(every, leaseRetryFloor), every*2/3))
}
