package server

import (
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/history"
)

// Parity tests of history.go's translators: every field crosses, or is
// listed with the reason it does not (parity_internal_test.go).

func TestHistoryEntryParity(t *testing.T) {
	src := fillNew[fsm.Applied](new(filler))
	src.Restored = false // write translates only entries; a restore is noted instead
	dst := historyEntry(src)
	checkParity(t, src, dst, crossing{
		dropped: map[string]string{
			"Restored":       "write notes a restore itself (history.DB.Restored) and never translates one",
			"Attempts[].Key": "a key of the job's binaries; the history keeps where the attempt ran (Machine)",
		},
		derived: map[string]string{
			"Events[].Seq": "the event's place in its entry (checked below)",
		},
	})
	for i, e := range dst.Events {
		if e.Seq != i {
			t.Errorf("Events[%d].Seq = %d, want %d", i, e.Seq, i)
		}
	}
}

func TestEventToWireHistoryParity(t *testing.T) {
	src := fillNew[history.Event](new(filler))
	checkParity(t, src, eventToWireHistory(src), crossing{
		dropped: map[string]string{"Seq": "orders the events of one entry in the file; the wire lists them in that order"},
	})
}

func TestAttemptToWireParity(t *testing.T) {
	src := fillNew[history.Attempt](new(filler))
	checkParity(t, src, attemptToWire(src), crossing{})
}
