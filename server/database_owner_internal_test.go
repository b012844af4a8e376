package server

import (
	"strings"
	"testing"
)

// TestParseDatabaseChecksWindows: a window no stub could follow is
// refused at load time, at its declaration; good ones load.
func TestParseDatabaseChecksWindows(t *testing.T) {
	db, err := parseDatabase("ok.db", []byte(`mtype desk = {available={"Mon-Fri 18:00-08:00", "Sat-Sun"}}`+"\nmachine flute = desk\n"))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got := db.MTypes[0].Owner["available"]; got != "Mon-Fri 18:00-08:00; Sat-Sun" {
		t.Errorf("available: got %q", got)
	}
	_, err = parseDatabase("bad.db", []byte("key k\nmachine flute = {available={\"Someday 25:00-26:00\"}}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "bad.db:2:1: window \"Someday 25:00-26:00\" in machine flute:") {
		t.Errorf("got %v, want an error at bad.db:2:1 naming the window", err)
	}
}
