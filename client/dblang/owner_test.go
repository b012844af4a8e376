package dblang

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// ownerDB declares owner settings on an mtype, on machines and on queues.
const ownerDB = `mtype desk = {mem=64, sleep_on_input=15, sleep_on_load=0.3, vacate_after=10m, available={"Mon-Fri 18:00-08:00", "Sat-Sun"}}
machine flute = desk
machine viola = {desk, sleep_on_input=90s, keep_suspended=yes, load_monitor=/usr/local/bin/busy}
machine bongo = {sleep_on_login=2h}
add_q LONG = {nq_maxrun=600, keep_suspended=yes, vacate_after=30m}
add_q SHORT = {suspend=no}
`

func TestOwnerSettingsParseAndResolve(t *testing.T) {
	db, err := Parse("owner.db", []byte(ownerDB))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	desk := map[string]string{"sleep_on_input": "15", "sleep_on_load": "0.3", "vacate_after": "10", "available": "Mon-Fri 18:00-08:00; Sat-Sun"}
	if got := db.FindMType("desk").Owner; !maps.Equal(got, desk) {
		t.Errorf("mtype desk: got %v, want %v", got, desk)
	}
	tests := []struct {
		machine string
		want    map[string]string
	}{
		{"flute", desk},
		{"viola", map[string]string{"sleep_on_input": "90s", "sleep_on_load": "0.3", "vacate_after": "10",
			"available": "Mon-Fri 18:00-08:00; Sat-Sun", "keep_suspended": "yes", "load_monitor": "/usr/local/bin/busy"}},
		{"bongo", map[string]string{"sleep_on_login": "120"}},
	}
	for _, tt := range tests {
		r, ok := db.Resolve(tt.machine)
		if !ok || !maps.Equal(r.Owner, tt.want) {
			t.Errorf("Resolve(%s).Owner: got %v, want %v (the machine's over its mtype's)", tt.machine, r.Owner, tt.want)
		}
	}
	if got, want := db.FindQueue("LONG").Owner, map[string]string{"keep_suspended": "yes", "vacate_after": "30"}; !maps.Equal(got, want) {
		t.Errorf("queue LONG: got %v, want %v", got, want)
	}
	if got, want := db.FindQueue("SHORT").Owner, map[string]string{"suspend": "no"}; !maps.Equal(got, want) {
		t.Errorf("queue SHORT: got %v, want %v", got, want)
	}
	back, err := Parse("formatted", Format(db))
	if err != nil {
		t.Fatalf("Parse(Format): %v\n%s", err, Format(db))
	}
	if !back.Equal(db) {
		t.Errorf("Parse(Format) differs:\n%s", Format(db))
	}
	if d, ok := OwnerDuration("90s"); !ok || d != 90*time.Second {
		t.Errorf("OwnerDuration(90s) = %v, %v", d, ok)
	}
	if d, ok := OwnerDuration("15"); !ok || d != 15*time.Minute {
		t.Errorf("OwnerDuration(15) = %v, %v; a bare number is minutes", d, ok)
	}
	if got := OwnerWindows("Mon-Fri 18:00-08:00; Sat-Sun"); len(got) != 2 || got[1] != "Sat-Sun" {
		t.Errorf("OwnerWindows: got %q", got)
	}
}

func TestOwnerSettingsErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"machine m = {sleep_on_input=soon}", "1:29: bad duration \"soon\" for sleep_on_input in machine m"},
		{"machine m = {sleep_on_load=-1}", "1:28: sleep_on_load in machine m is negative"},
		{"machine m = {keep_suspended=maybe}", "1:29: keep_suspended in machine m wants yes or no"},
		{"machine m = {available=\"Sat-Sun\"}", "1:24: available in machine m wants a {"},
		{"machine m = {available={}}", "1:24: available in machine m lists no window"},
		{"machine m = {suspend=no}", "1:22: bad number \"no\" for attribute suspend"},
		{"machine m = {sleep_on_input=1, sleep_on_input=2}", "1:32: sleep_on_input is given twice in machine m"},
		{"add_q Q = {sleep_on_input=5}", "1:12: unknown queue parameter \"sleep_on_input\""},
		{"add_q Q = {suspend=perhaps}", "1:20: suspend in add_q Q wants yes or no"},
	}
	for _, tt := range tests {
		_, err := Parse("t.db", []byte(tt.src+"\n"))
		var list ErrorList
		if !errors.As(err, &list) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): got %v, want an error containing %q", tt.src, err, tt.want)
		}
	}
}

func TestOwnerSettingsInit(t *testing.T) {
	src := "mtype=desk, sleep_on_input=5m, sleep_on_load=1.5\navailable={\"Sat-Sun\"}, keep_suspended=no, load_monitor=\"/opt/my mon\"\n"
	in, err := ParseInit("init", []byte(src))
	if err != nil {
		t.Fatalf("ParseInit: %v", err)
	}
	want := map[string]string{"sleep_on_input": "5", "sleep_on_load": "1.5", "available": "Sat-Sun", "keep_suspended": "no", "load_monitor": "/opt/my mon"}
	if !maps.Equal(in.Owner, want) {
		t.Errorf("got %v, want %v", in.Owner, want)
	}
	back, err := ParseInit("formatted", FormatInit(in))
	if err != nil || !back.Equal(in) {
		t.Errorf("ParseInit(FormatInit): got %+v, %v, want %+v\n%s", back, err, in, FormatInit(in))
	}
	if _, err := ParseInit("init", []byte("suspend=no\n")); err == nil {
		t.Errorf("suspend in an init file: got no error, want one (it is a queue's setting)")
	}
}
