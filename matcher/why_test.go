package matcher

import "testing"

func TestWhy(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"empty pool", Result{Machine: -1}, "no machines in the pool"},
		{"placed, nothing rejected", Result{Machine: 0, Key: "k"}, ""},
		{
			"plural then singular",
			Result{Machine: -1, Rejections: []Rejection{
				{FilterKeys, 8, "lack key mathlab"},
				{FilterAttrs, 3, "have mem<=10"},
				{FilterSlot, 1, "has no free slot"},
			}},
			"8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot",
		},
		{
			"singular then plural",
			Result{Machine: -1, Rejections: []Rejection{
				{FilterBinary, 1, "lacks binary key sparc|mips"},
				{FilterUp, 2, "are down or draining"},
			}},
			"1 machine lacks binary key sparc|mips; 2 are down or draining",
		},
		{
			"placed with rejections",
			Result{Machine: 4, Key: "k", Rejections: []Rejection{{FilterAwake, 1, "is asleep"}}},
			"1 machine is asleep",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Why(); got != tt.want {
				t.Errorf("Why() = %q, want %q", got, tt.want)
			}
		})
	}
}
