package stub

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Threshold is the least free space (in bytes) or free inodes a
// directory's file system must keep for the stub to take new work: an
// Amount, a Percent of the file system's total, or both, when the smaller
// of the two is the minimum. The zero Threshold stands for the default of
// its kind (DefaultMinFreeDisk, DefaultMinFreeInodes); Off turns the check
// off.
type Threshold struct {
	Amount  uint64
	Percent float64
	Off     bool
}

// The default thresholds: the smaller of 1% and 256 MiB of free space,
// and of 1% and 1000 free inodes. A large disk keeps 256 MiB, a small one
// 1%; a start takes four inodes.
var (
	DefaultMinFreeDisk   = Threshold{Amount: 256 << 20, Percent: 1}
	DefaultMinFreeInodes = Threshold{Amount: 1000, Percent: 1}
)

// or returns t, or def when t is the zero Threshold.
func (t Threshold) or(def Threshold) Threshold {
	if t == (Threshold{}) {
		return def
	}
	return t
}

// min is the least free amount t asks of a file system of total.
func (t Threshold) min(total uint64) uint64 {
	if t.Off {
		return 0
	}
	limit := uint64(math.MaxUint64)
	if t.Amount > 0 {
		limit = t.Amount
	}
	if t.Percent > 0 {
		limit = min(limit, uint64(t.Percent/100*float64(total)))
	}
	if limit == math.MaxUint64 {
		return 0
	}
	return limit
}

// format describes t for people; bytes says whether its Amount is bytes.
func (t Threshold) format(bytes bool) string {
	amount := strconv.FormatUint(t.Amount, 10)
	if bytes {
		amount = formatBytes(t.Amount)
	}
	switch {
	case t.Off:
		return "0"
	case t.Amount > 0 && t.Percent > 0:
		return fmt.Sprintf("the smaller of %s and %g%%", amount, t.Percent)
	case t.Percent > 0:
		return fmt.Sprintf("%g%%", t.Percent)
	}
	return amount
}

// ParseThreshold reads a threshold as the --min-free-disk and
// --min-free-inodes flags take it: "1%" (a percentage of the file
// system's total), an amount ("256MiB" when bytes is set: a number with an
// optional unit B, K, M, G or T, each a power of 1024, with or without
// "iB" or "B"; a plain number of inodes otherwise), both joined by a comma
// ("256MiB,1%": the smaller of the two), or "0", which turns the check
// off.
func ParseThreshold(s string, bytes bool) (Threshold, error) {
	var t Threshold
	s = strings.TrimSpace(s)
	if s == "0" {
		return Threshold{Off: true}, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if p, ok := strings.CutSuffix(part, "%"); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || v <= 0 || v > 100 || t.Percent != 0 {
				return t, fmt.Errorf("threshold %q: want a percentage above 0 and at most 100, once", s)
			}
			t.Percent = v
			continue
		}
		var v uint64
		var err error
		if bytes {
			v, err = parseBytes(part)
		} else {
			v, err = strconv.ParseUint(part, 10, 64)
		}
		if err != nil || v == 0 || t.Amount != 0 {
			return t, fmt.Errorf("threshold %q: want an amount above 0 (%s) or a percentage (1%%), once each", s, map[bool]string{true: "256MiB", false: "1000"}[bytes])
		}
		t.Amount = v
	}
	return t, nil
}

// parseBytes reads a size such as "256MiB", "1.5G", "512k" or "4096".
func parseBytes(s string) (uint64, error) {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(s)
	}
	num, unit := s[:end], strings.ToUpper(strings.TrimSpace(s[end:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit B, K, M, G or T", s)
	}
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	shift, ok := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit; want B, K, M, G or T", s)
	}
	return uint64(v * float64(uint64(1)<<shift)), nil
}

// formatBytes prints a size as "0 B", "512 B", "12 KiB", "3.4 MiB".
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	prec := 1
	if v >= 10 {
		prec = 0
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + string("KMGTP"[exp]) + "iB"
}
