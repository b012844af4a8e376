package dblang

import (
	"strings"
	"testing"
)

// TestKillGrace checks kill_grace on add_q: bare seconds or with a unit,
// formatted back in seconds, and a round trip through Format.
func TestKillGrace(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int64
	}{
		{"bare seconds", "30", 30},
		{"seconds", "45s", 45},
		{"minutes", "2m", 120},
		{"an hour", "1h", 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Parse("t.db", []byte("add_q CKPT = {nq_maxrun=60, kill_grace="+tc.text+"}\n"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := db.Queues[0].KillGraceSeconds; got != tc.want {
				t.Errorf("KillGraceSeconds = %d, want %d", got, tc.want)
			}
			text := string(Format(db))
			if !strings.Contains(text, "kill_grace="+formatGrace(tc.want)) {
				t.Errorf("Format wrote %q, want kill_grace=%s in it", text, formatGrace(tc.want))
			}
			again, err := Parse("t.db", []byte(text))
			if err != nil || !again.Equal(db) {
				t.Errorf("Parse(Format(db)) = %+v, %v; want it equal to db", again, err)
			}
		})
	}
}
