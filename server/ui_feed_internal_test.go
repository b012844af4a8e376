package server

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// Events of one entry get distinct keys (a page shows each once), and
// the text names the job, instance and machine.
func TestUIEventKeysAndText(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	evs := []fsm.Event{
		{Index: 50, At: at, Kind: fsm.EventMachineUnreachable, Instance: -1, Machine: "flute"},
		{Index: 50, At: at, Kind: fsm.EventMachineUnreachable, Instance: -1, Machine: "viola"},
		{Index: 50, At: at, Kind: fsm.EventInstanceRestarted, Job: 7, Instance: 2, Attempt: 3, Machine: "viola"},
	}
	seen := map[string]bool{}
	for _, e := range evs {
		u := uiEvent(e)
		if seen[u.Key] {
			t.Errorf("key %s given twice", u.Key)
		}
		seen[u.Key] = true
	}
	if got, want := uiEvent(evs[2]).Text, "instance restarted job 7.2 on viola"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if got, want := uiEvent(evs[0]).Text, "machine unreachable on flute"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}
