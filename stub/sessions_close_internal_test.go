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

// TestShellIDNeverStartedTwice: a shell id starts a shell once; a request
// for it while its shell starts, or after its session ended (a client
// whose connection broke as its shell's session closed dials again), is
// refused, and an id whose shell failed to start stays refused too.
func TestShellIDNeverStartedTwice(t *testing.T) {
	ss := newSessions(slog.New(slog.DiscardHandler), nil)
	k := client.AttemptRef{JobID: 7, Instance: 0, Attempt: 1}
	if !ss.claimShell(k, "s1") {
		t.Fatal("a new shell id is refused")
	}
	if ss.claimShell(k, "s1") {
		t.Fatal("a shell id is claimed twice while its shell starts")
	}
	js := &jobSession{k: k, shell: "s1", reg: ss}
	ss.byID[sessionKey{k, "s1"}] = js
	ss.forget(js)
	if ss.claimShell(k, "s1") {
		t.Fatal("an ended shell's id is claimed again: its command would run twice")
	}
	if !ss.claimShell(k, "s2") {
		t.Fatal("another shell id is refused")
	}
	ss.shellFailed(k, "s2")
	if ss.claimShell(k, "s2") {
		t.Fatal("a failed shell's id is claimed again")
	}
	other := client.AttemptRef{JobID: 7, Instance: 0, Attempt: 2}
	if !ss.claimShell(other, "s1") {
		t.Fatal("the same id in another attempt is refused")
	}
}
