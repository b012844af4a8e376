package dblang

import (
	"strings"
	"testing"
)

func TestParseInteractiveQueue(t *testing.T) {
	src := "add_q now = {interactive=yes, nq_maxuser_active=1}\nadd_q batch = {priority=9, interactive=no}\n"
	db, err := Parse("site.db", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !db.Queues[0].Interactive || db.Queues[1].Interactive {
		t.Fatalf("queues %+v", db.Queues)
	}
	out := Format(db)
	if !strings.Contains(string(out), "add_q now = {nq_maxuser_active=1, interactive=yes}") || strings.Contains(string(out), "interactive=no") {
		t.Errorf("Format:\n%s", out)
	}
	again, err := Parse("again.db", out)
	if err != nil || !again.Equal(db) {
		t.Errorf("Format does not read back equal (%v):\n%s", err, out)
	}
	other := *db
	other.Queues = append([]Queue(nil), db.Queues...)
	other.Queues[0].Interactive = false
	if other.Equal(db) {
		t.Error("Equal ignores interactive=")
	}
}
