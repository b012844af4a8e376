package dblang

import (
	"strings"
	"testing"
)

// TestQueuePolicy checks policy= on add_q: each policy parses, formats
// back (backfill, the default, as nothing) and round-trips; anything
// else is refused with the list of policies.
func TestQueuePolicy(t *testing.T) {
	for _, p := range Policies {
		t.Run(p, func(t *testing.T) {
			db, err := Parse("t.db", []byte("add_q MPI = {priority=5, policy="+p+"}\n"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := db.Queues[0].Policy; got != p {
				t.Errorf("Policy = %q, want %q", got, p)
			}
			text := string(Format(db))
			if want := "policy=" + p; p != PolicyBackfill && !strings.Contains(text, want) {
				t.Errorf("Format wrote %q, want %s in it", text, want)
			}
			again, err := Parse("t.db", []byte(text))
			if err != nil {
				t.Fatalf("Parse(Format(db)): %v", err)
			}
			if got := again.Queues[0].Policy; got != p && !(p == PolicyBackfill && got == "") {
				t.Errorf("Parse(Format(db)) policy %q, want %q", got, p)
			}
		})
	}
	_, err := Parse("t.db", []byte("add_q Q = {policy=fifo}\n"))
	if err == nil || !strings.Contains(err.Error(), `bad policy "fifo" in add_q Q; write one of backfill, gang, dedicated, spread`) {
		t.Errorf("got %v, want the bad policy refused with the list", err)
	}
}
