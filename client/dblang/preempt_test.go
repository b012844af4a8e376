package dblang

import (
	"strings"
	"testing"
)

// TestQueuePreempt checks preempt= on add_q: each mode parses, formats
// back and round-trips, Equal tells them apart, and anything else is
// refused saying what each mode does.
func TestQueuePreempt(t *testing.T) {
	for _, m := range PreemptModes {
		t.Run(m, func(t *testing.T) {
			db, err := Parse("t.db", []byte("add_q DEBUG = {priority=10, preempt="+m+"}\n"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := db.Queues[0].Preempt; got != m {
				t.Errorf("Preempt = %q, want %q", got, m)
			}
			text := string(Format(db))
			if want := "preempt=" + m; !strings.Contains(text, want) {
				t.Errorf("Format wrote %q, want %s in it", text, want)
			}
			again, err := Parse("t.db", []byte(text))
			if err != nil {
				t.Fatalf("Parse(Format(db)): %v", err)
			}
			if !again.Equal(db) {
				t.Errorf("Parse(Format(db)) = %+v, want %+v", again.Queues, db.Queues)
			}
			none, _ := Parse("t.db", []byte("add_q DEBUG = {priority=10}\n"))
			if none.Equal(db) {
				t.Errorf("a queue with preempt=%s equals one without", m)
			}
		})
	}
	for _, bad := range []string{"preempt=cancel", "preempt=3", "preempt"} {
		_, err := Parse("t.db", []byte("add_q Q = {"+bad+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "add_q Q") || !strings.Contains(err.Error(), "preempt") {
			t.Errorf("%s: got %v, want it refused naming add_q Q and preempt", bad, err)
		}
	}
	_, err := Parse("t.db", []byte("add_q Q = {preempt=cancel}\n"))
	if err == nil || !strings.Contains(err.Error(), `bad preempt "cancel" in add_q Q; write preempt=requeue (stop and queue again) or preempt=suspend`) {
		t.Errorf("got %v, want the bad mode refused with the two modes", err)
	}
}
