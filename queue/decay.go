package queue

import (
	"math/big"
	"math/bits"
	"time"
)

// DefaultHalfLife is the fair-share half-life when the database sets no
// fairshare_halflife: a week, as Slurm's PriorityDecayHalfLife.
const DefaultHalfLife = 7 * 24 * time.Hour

// Usage is one user's or account's decayed usage: Value slot-milliseconds
// as they stood at At (Unix milliseconds, a committed time). It is kept in
// integers and decayed with integer arithmetic only (Decay), so every
// replica, whatever its CPU, computes the same bits: floating point may
// differ between architectures (fused multiply-add, assembly math
// routines), integers do not.
type Usage struct {
	Value uint64 `json:"value"`
	At    int64  `json:"at"`
}

// Charge returns u with amount slot-milliseconds added at at (Unix ms):
// the old value is first decayed from u.At to at with the half-life hl.
// A charge dated before u.At (a new leader's clock behind the old one's)
// is added undecayed and leaves At where it is, so a charge is never lost
// and time never runs backwards.
func (u Usage) Charge(amount uint64, at int64, hl time.Duration) Usage {
	if at > u.At {
		u.Value = Decay(u.Value, at-u.At, hl)
		u.At = at
	}
	if u.Value > ^uint64(0)-amount {
		u.Value = ^uint64(0)
	} else {
		u.Value += amount
	}
	return u
}

// ValueAt is u decayed to at (Unix ms); u.Value when at is not after u.At.
func (u Usage) ValueAt(at int64, hl time.Duration) uint64 {
	if at <= u.At {
		return u.Value
	}
	return Decay(u.Value, at-u.At, hl)
}

// halvings[i] is 2^(-2^-(i+1)) in fixed point with 62 fraction bits:
// 2^-1/2, 2^-1/4, ... Each is the integer square root of the one before
// (math/big, exact), so the table is the same bits everywhere.
var halvings = func() [fracBits]uint64 {
	var t [fracBits]uint64
	one := new(big.Int).Lsh(big.NewInt(1), 62)
	x := new(big.Int).Rsh(one, 1) // 1/2
	for i := range t {
		x.Sqrt(x.Mul(x, one))
		t[i] = x.Uint64()
	}
	return t
}()

// fracBits is how finely Decay resolves the fraction of a half-life.
const fracBits = 32

// Decay is value decayed over elapsed milliseconds with half-life hl:
// value × 2^(-elapsed/hl), rounded down, in integer arithmetic only. The
// whole half-lives shift it right; the fraction left, to 32 bits, is a
// product of the table halvings. A half-life below a millisecond counts
// as one.
func Decay(value uint64, elapsedMS int64, hl time.Duration) uint64 {
	if elapsedMS <= 0 || value == 0 {
		return value
	}
	h := max(hl.Milliseconds(), 1)
	whole := elapsedMS / h
	if whole >= 64 {
		return 0
	}
	value >>= uint(whole)
	rest := uint64(elapsedMS % h)
	// frac = rest/h in fixed point with fracBits bits, without overflow.
	hi, lo := bits.Mul64(rest, 1<<fracBits)
	frac, _ := bits.Div64(hi, lo, uint64(h))
	f := uint64(1) << 62
	for i := range fracBits {
		if frac&(1<<(fracBits-1-i)) != 0 {
			f = mulQ62(f, halvings[i])
		}
	}
	return mulQ62(value, f)
}

// mulQ62 is a × b / 2^62, rounded down, for b at most 2^62.
func mulQ62(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi<<2 | lo>>62
}
