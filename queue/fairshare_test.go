package queue

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestDecayExact(t *testing.T) {
	const h = time.Hour
	hms := h.Milliseconds()
	for _, tc := range []struct {
		name    string
		value   uint64
		elapsed int64
		want    uint64
	}{
		{"no time", 1000, 0, 1000},
		{"backwards", 1000, -5, 1000},
		{"one half-life", 1 << 40, hms, 1 << 39},
		{"three half-lives", 1 << 40, 3 * hms, 1 << 37},
		{"half a half-life", 1 << 40, hms / 2, 777472127993},   // 2^40 / sqrt(2), rounded down
		{"a quarter", 1 << 40, hms / 4, 924575386326},          // 2^40 × 2^-1/4
		{"one and a half", 1 << 40, hms + hms/2, 388736063996}, // 2^39 / sqrt(2)
		{"64 half-lives", math.MaxUint64, 64 * hms, 0},
		{"zero", 0, hms, 0},
	} {
		if got := Decay(tc.value, tc.elapsed, h); got != tc.want {
			t.Errorf("%s: Decay(%d, %d ms) = %d, want %d", tc.name, tc.value, tc.elapsed, got, tc.want)
		}
	}
}

// TestDecayCloseToExp checks the integer decay against floating point
// over many fractions: within a few parts in a billion.
func TestDecayCloseToExp(t *testing.T) {
	const v = uint64(1) << 50
	h := 7 * 24 * time.Hour
	for e := int64(0); e < 3*h.Milliseconds(); e += 7777777 {
		got := float64(Decay(v, e, h))
		want := float64(v) * math.Exp2(-float64(e)/float64(h.Milliseconds()))
		if math.Abs(got-want)/want > 1e-8 {
			t.Fatalf("Decay after %d ms = %.0f, want about %.0f", e, got, want)
		}
	}
}

func TestUsageCharge(t *testing.T) {
	h := time.Hour
	hms := h.Milliseconds()
	u := Usage{}.Charge(1000, 10, h)
	if u != (Usage{Value: 1000, At: 10}) {
		t.Fatalf("first charge: got %+v", u)
	}
	u = u.Charge(500, 10+hms, h) // 1000 halves to 500, plus 500
	if u != (Usage{Value: 1000, At: 10 + hms}) {
		t.Fatalf("second charge: got %+v", u)
	}
	// A charge dated earlier (a new leader's clock behind) adds undecayed
	// and keeps At.
	u = u.Charge(7, 5, h)
	if u != (Usage{Value: 1007, At: 10 + hms}) {
		t.Fatalf("earlier charge: got %+v", u)
	}
	if got := u.ValueAt(10+2*hms, h); got != 503 {
		t.Errorf("ValueAt one half-life on: got %d, want 503", got)
	}
	if got := (Usage{Value: math.MaxUint64 - 1}).Charge(5, 0, h); got.Value != math.MaxUint64 {
		t.Errorf("overflow: got %d, want the maximum", got.Value)
	}
}

func TestShareRanks(t *testing.T) {
	keys := []ShareKey{
		{AccountUsage: 100, AccountShare: 10, UserUsage: 50, UserShare: 1},  // 0: physics, alice
		{AccountUsage: 100, AccountShare: 10, UserUsage: 50, UserShare: 2},  // 1: physics, bob (double share)
		{AccountUsage: 30, AccountShare: 1, UserUsage: 30, UserShare: 1},    // 2: default, carol: 30 per share
		{AccountUsage: 0, AccountShare: 1, UserUsage: 0, UserShare: 1},      // 3: nobody used anything
		{AccountUsage: 100, AccountShare: 10, UserUsage: 100, UserShare: 2}, // 4: same as alice per share
	}
	got := ShareRanks(keys)
	want := []int{2, 1, 4, 0, 2}
	if !slices.Equal(got, want) {
		t.Errorf("ShareRanks = %v, want %v", got, want)
	}
	// Huge values compare exactly, without overflow.
	big := []ShareKey{{AccountUsage: math.MaxUint64, AccountShare: 3}, {AccountUsage: math.MaxUint64 - 1, AccountShare: 3}}
	if got := ShareRanks(big); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("ShareRanks of huge usages = %v, want [1 0]", got)
	}
}

func TestFactor(t *testing.T) {
	if got := Factor(0, 0, 1, 1); got != 1 {
		t.Errorf("no usage: %v, want 1", got)
	}
	// Half the usage on half the shares: 2^-1.
	if got := Factor(50, 100, 1, 2); got != 0.5 {
		t.Errorf("got %v, want 0.5", got)
	}
	if got := Factor(100, 100, 1, 4); math.Abs(got-1.0/16) > 1e-12 {
		t.Errorf("got %v, want 1/16", got)
	}
}

func TestOrderShareBeforeSubmit(t *testing.T) {
	items := []Item{
		{JobID: 1, SubmitIndex: 1, Share: 1},
		{JobID: 2, SubmitIndex: 2, Share: 1},
		{JobID: 3, SubmitIndex: 3, Share: 0},
		{JobID: 4, SubmitIndex: 4, Share: 5, Priority: 1},
	}
	Order(items)
	var got []uint64
	for _, it := range items {
		got = append(got, it.JobID)
	}
	if want := []uint64{4, 3, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v: priority, then share rank, then submit order", got, want)
	}
}

func TestActiveUser(t *testing.T) {
	a := NewActive(map[string]Limits{"q": {MaxUserActive: 2, MaxActive: 3}}, map[string]int{"q": 1})
	a.SetUserRunning("q", "alice", 1)
	if !a.AdmitUser("q", "alice") {
		t.Fatal("alice at 1 of 2 refused")
	}
	a.TakeUser("q", "alice")
	if a.AdmitUser("q", "alice") {
		t.Fatal("alice at 2 of 2 admitted")
	}
	if got, want := a.ReasonUser("q", "alice"), "user alice already runs 2 instances in queue q (nq_maxuser_active=2)"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	if !a.AdmitUser("q", "bob") || a.ReasonUser("q", "bob") != "" {
		t.Fatal("bob refused")
	}
	a.TakeUser("q", "bob")
	if got, want := a.ReasonUser("q", "bob"), "queue q already runs 3 instances (nq_maxactive=3)"; got != want {
		t.Errorf("reason %q, want %q: the queue's own limit first", got, want)
	}
}

func TestCheckUser(t *testing.T) {
	l := Limits{MaxUserQueued: 2}
	if err := CheckUser("q", l, "alice", 1); err != nil {
		t.Fatalf("1 of 2: %v", err)
	}
	err := CheckUser("q", l, "alice", 2)
	if !errors.Is(err, ErrUserQueueFull) {
		t.Fatalf("2 of 2: got %v, want ErrUserQueueFull", err)
	}
	if want := "user alice already holds 2 unfinished jobs in queue q (nq_maxuser_queued=2); wait for some to finish or use another queue"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if err := CheckUser("q", Limits{}, "alice", 1000); err != nil {
		t.Errorf("no limit: %v", err)
	}
}
