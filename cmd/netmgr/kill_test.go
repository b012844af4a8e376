package main

import "testing"

func TestNormalizeSignal(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"", "", false},
		{"TERM", "TERM", false},
		{"sigint", "INT", false},
		{"SIGKILL", "KILL", false},
		{" hup ", "HUP", false},
		{"usr1", "USR1", false},
		{"9", "", true},
		{"BOGUS", "", true},
		{"SIG", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := normalizeSignal(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("normalizeSignal(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("normalizeSignal(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	got := splitList([]string{"a:1,b:2", " c:3 ", ",", ""})
	want := []string{"a:1", "b:2", "c:3"}
	if len(got) != len(want) {
		t.Fatalf("splitList() = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("splitList()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
