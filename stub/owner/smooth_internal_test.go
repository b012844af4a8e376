package owner

import (
	"math"
	"testing"
	"time"
)

func TestSmootherFollowsTheLoadAverage(t *testing.T) {
	var s smoother
	t0 := time.Unix(1_700_000_000, 0)
	if got := s.add(1, t0); got != 0 {
		t.Fatalf("first reading: got %v, want 0 (no time has passed)", got)
	}
	// One busy CPU for a minute, read every 5 s as the kernel does: the
	// average reaches 1-1/e, as the 1-minute load average would.
	var got float64
	for i := 1; i <= 12; i++ {
		got = s.add(1, t0.Add(time.Duration(i)*5*time.Second))
	}
	if want := 1 - math.Exp(-1); math.Abs(got-want) > 1e-9 {
		t.Errorf("after a minute: got %v, want %v", got, want)
	}
	if again := s.add(0, t0.Add(60*time.Second)); again != got {
		t.Errorf("a reading at the same time changed the average: %v, then %v", got, again)
	}
}
