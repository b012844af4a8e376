package client

import (
	"context"
	"time"
)

// oneRoundKey marks the requests of a context made WithOneRound.
type oneRoundKey struct{}

// WithOneRound returns ctx making the requests sent with it ask each
// server at most once: a round in which none answered is the request's
// error, not retried after a backoff. A stub's lease renewals go so, and
// the stub paces their retries itself (LeaseRetryWait). Left to the
// client's own retries (25 ms doubling, six rounds in a 1.5 s renewal),
// 10,000 stubs whose leader died asked the two survivors some 80,000
// times a second, and the election between them never finished.
func WithOneRound(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneRoundKey{}, true)
}

// oneRound reports whether ctx was made WithOneRound.
func oneRound(ctx context.Context) bool {
	v, _ := ctx.Value(oneRoundKey{}).(bool)
	return v
}

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
