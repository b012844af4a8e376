package queue

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// DefaultAccount is the account of a user the database puts in none.
const DefaultAccount = "default"

// ShareKey is what places one user's waiting work by fair share: the
// decayed usage and the share of the user's account, then the user's own
// within the account. All usages compared must be decayed to one common
// time (Usage.ValueAt); a share of 0 counts as 1.
type ShareKey struct {
	AccountUsage, AccountShare uint64
	UserUsage, UserShare       uint64
}

// CompareShares returns a negative number when a's work goes before b's:
// the account with less usage per share first (Slurm's fair-share factor
// 2^(-U/S) is higher), then, within equal accounts, the user with less
// usage per share. The ratios are compared exactly, as 128-bit cross
// products, so no rounding can tell two replicas apart.
func CompareShares(a, b ShareKey) int {
	if c := compareRatio(a.AccountUsage, a.AccountShare, b.AccountUsage, b.AccountShare); c != 0 {
		return c
	}
	return compareRatio(a.UserUsage, a.UserShare, b.UserUsage, b.UserShare)
}

// compareRatio compares ua/sa with ub/sb.
func compareRatio(ua, sa, ub, sb uint64) int {
	sa, sb = max(sa, 1), max(sb, 1)
	ahi, alo := bits.Mul64(ua, sb)
	bhi, blo := bits.Mul64(ub, sa)
	if ahi != bhi {
		return cmp.Compare(ahi, bhi)
	}
	return cmp.Compare(alo, blo)
}

// ShareRanks returns, for each key, its rank in fair-share order: 0 for
// the keys that go first, equal keys sharing a rank. Item.Share takes it,
// so sorting the waiting work compares one integer, however many items a
// user has. This is the one place the built-in fair-share order is
// decided; a site's policy can replace it by ranks of its own.
func ShareRanks(keys []ShareKey) []int {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return CompareShares(keys[a], keys[b]) })
	ranks := make([]int, len(keys))
	rank := 0
	for n, i := range idx {
		if n > 0 && CompareShares(keys[idx[n-1]], keys[i]) != 0 {
			rank = n
		}
		ranks[i] = rank
	}
	return ranks
}

// Factor is Slurm's fair-share factor 2^(-U/S), for people: U is usage
// over total (the usage of everyone it is compared with), S is share over
// totalShares. It is 1 when nobody has used anything. It is computed in
// floating point and so only shown, never used to order work (the order
// is CompareShares', which is exact).
func Factor(usage, total, share, totalShares uint64) float64 {
	if total == 0 || usage == 0 {
		return 1
	}
	u := float64(usage) / float64(total)
	s := float64(max(share, 1)) / float64(max(totalShares, 1))
	return math.Exp2(-u / s)
}
