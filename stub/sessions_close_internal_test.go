package stub

import (
	"log/slog"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// TestSessionCloseToldOnce: of the relays that ask after a session ends,
// only the first is told it closed (and records it); a live session and
// an unknown one tell nobody.
func TestSessionCloseToldOnce(t *testing.T) {
	ss := newSessions(slog.New(slog.DiscardHandler), nil)
	k := client.AttemptRef{JobID: 7, Instance: 0, Attempt: 1}
	js := &jobSession{k: k, shell: "s1", reg: ss}
	ss.byID[sessionKey{k, "s1"}] = js
	if ss.get(k, "s1") == nil || ss.claimClose(k, "s1") {
		t.Fatal("a live session is claimed closed")
	}
	ss.forget(js)
	if ss.get(k, "s1") != nil {
		t.Fatal("a forgotten session is still live")
	}
	if !ss.claimClose(k, "s1") {
		t.Fatal("the first relay to ask is not told the session closed")
	}
	if ss.claimClose(k, "s1") {
		t.Fatal("a second relay is told too: the close would be recorded twice")
	}
	if ss.claimClose(k, "") {
		t.Fatal("a session never held is claimed closed")
	}
}
