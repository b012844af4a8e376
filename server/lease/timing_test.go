package lease

import (
	"testing"
	"time"
)

// TestTimingFor checks what the scaled timing promises: a small pool's
// timing is the one the outage rule was first proven with, the timing
// never shortens as the pool grows (a new leader assumes the timing of
// the pool it knows), the leader takes at most some 3,400 renewals a
// second up to 10,000 machines, and a dead machine's lease expires
// within 9 s of its last renewal there.
func TestTimingFor(t *testing.T) {
	for _, pool := range []int{0, 1, 2, 1000, 1666} {
		if got := TimingFor(pool); got.Duration != Duration || got.Renew != Renew {
			t.Errorf("TimingFor(%d) = %+v, want %v, %v", pool, got, Duration, Renew)
		}
	}
	prev := TimingFor(0)
	for pool := 1; pool <= 50_000; pool++ {
		got := TimingFor(pool)
		if got.Duration < prev.Duration || got.Renew < prev.Renew {
			t.Fatalf("TimingFor(%d) = %+v, shorter than TimingFor(%d) = %+v", pool, got, pool-1, prev)
		}
		if got.Duration != 2*got.Renew+Duration-2*Renew || got.Duration > MaxDuration {
			t.Fatalf("TimingFor(%d) = %+v: lease not twice the interval plus %v, or over %v", pool, got, Duration-2*Renew, MaxDuration)
		}
		if perSecond := float64(pool) / got.Renew.Seconds(); pool <= 10_000 && perSecond > 3400 {
			t.Fatalf("TimingFor(%d) = %+v: %.0f renewals a second", pool, got, perSecond)
		}
		prev = got
	}
	if got := TimingFor(10_000); got.Duration+Margin > 9*time.Second {
		t.Errorf("TimingFor(10000) = %+v: a dead machine expires %v after its last renewal", got, got.Duration+Margin)
	}
	if got := SuspectAfter(10_000); got != 2*TimingFor(10_000).Renew {
		t.Errorf("SuspectAfter(10000) = %v", got)
	}
}
