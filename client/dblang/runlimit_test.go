package dblang

import "testing"

func TestRunLimitUnits(t *testing.T) {
	tests := []struct {
		text string
		secs int64
		back string
	}{
		{"200", 200 * 60, "200"},
		{"90s", 90, "90s"},
		{"120s", 120, "2"},
		{"30m", 30 * 60, "30"},
		{"2h", 2 * 3600, "120"},
		{"0", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			db, err := Parse("t.db", []byte("add_q Q = {nq_maxrun="+tt.text+"}\n"))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := db.Queues[0].MaxRunSeconds; got != tt.secs {
				t.Errorf("got %d seconds, want %d", got, tt.secs)
			}
			want := "add_q Q = {}\n"
			if tt.back != "" {
				want = "add_q Q = {nq_maxrun=" + tt.back + "}\n"
			}
			if got := string(Format(db)); got != want {
				t.Errorf("Format printed %q, want %q", got, want)
			}
		})
	}
}
