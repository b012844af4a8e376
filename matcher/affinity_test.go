package matcher

import "testing"

func TestMatchAffinity(t *testing.T) {
	tests := []struct {
		name     string
		prefer   string
		machines []MachineView
		want     string
	}{
		{"no preference: the idler", "", []MachineView{with(mv("back", "k"), load(0.5)), with(mv("idle", "k"))}, "idle"},
		{"back to its machine, a little busier", "back", []MachineView{with(mv("back", "k"), load(0.5)), with(mv("idle", "k"))}, "back"},
		{"not past one unit of load", "back", []MachineView{with(mv("back", "k"), load(1.5)), with(mv("idle", "k"))}, "idle"},
		{"its machine full: another", "back", []MachineView{with(mv("back", "k"), func(m *MachineView) { m.Slots, m.Running = 1, 1 }), with(mv("idle", "k"), load(3))}, "idle"},
		{"an unknown machine: as none", "gone", []MachineView{with(mv("back", "k"), load(0.5)), with(mv("idle", "k"))}, "idle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := match(t, Request{JobID: 1, BinaryKeys: []string{"k"}, Prefer: tt.prefer}, tt.machines)
			if n := name(got, tt.machines); n != tt.want {
				t.Errorf("machine = %q, want %q", n, tt.want)
			}
		})
	}
}
