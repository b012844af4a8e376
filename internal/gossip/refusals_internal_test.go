package gossip

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/client/pki"
)

// A node with a key the pool does not hold is refused, every time it
// tries, and the member it tries says so once a minute for that peer's
// host, with the count it held back when it says so again.
func TestWrongKeyIsRefusedAndLoggedOnceAMinute(t *testing.T) {
	a := startNode(t, "a", "127.0.0.1", pki.NewGossipKey())
	bad := startNode(t, "bad", "127.0.0.1", pki.NewGossipKey())

	const tries = 5
	for i := range tries {
		n, err := bad.Join([]string{a.Addr()})
		if n != 0 || err == nil {
			t.Fatalf("try %d: joined %d with a wrong key (err %v)", i, n, err)
		}
		// Its own side says why too.
		if !bad.Refused(err.Error()) {
			t.Errorf("try %d: the join error tells of no key problem: %v", i, err)
		}
	}
	if slices.Contains(a.Members(), "bad") || slices.Contains(bad.Members(), "a") {
		t.Fatalf("the node with the wrong key got in: a sees %v, bad sees %v", a.Members(), bad.Members())
	}
	// a logged each refusal before closing the connection, so all are in.
	refused := func() []string {
		return a.log.matching("WARN gossip refused", "not in this member's keyring", "peer=127.0.0.1:", "hint=")
	}
	if got := refused(); len(got) != 1 || !slices.ContainsFunc(got, containsAll("refused_since_last_logged=0")) {
		t.Fatalf("a logged %d refusals of %d tries within a minute, want 1 with none held: %q", len(got), tries, got)
	}
	if got := bad.log.matching("WARN gossip refused"); len(got) != 1 {
		t.Errorf("bad logged %d of its %d refused joins within a minute, want 1: %q", len(got), tries, got)
	}

	// A minute on, the next refusal is logged with those held back.
	a.clock.advance(RefusalEvery)
	if n, _ := bad.Join([]string{a.Addr()}); n != 0 {
		t.Fatal("joined with a wrong key")
	}
	got := refused()
	if len(got) != 2 || !containsAll(fmt.Sprintf("refused_since_last_logged=%d", tries-1))(got[1]) {
		t.Fatalf("after a minute a logged %q, want a second refusal with %d held", got, tries-1)
	}
}

// The refusal log keys on the peer's host: another host's refusals are
// logged apart, the same host's on another port are not, and lines that
// tell of no key problem are left to the log.
func TestRefusalsArePerPeerHost(t *testing.T) {
	rec, c := newLogRecorder(), &clock{}
	r := newRefusals(slog.New(rec), c.now)
	const problem = "[ERR] memberlist: failed to receive: No installed keys could decrypt the message from=%s"
	for _, tt := range []struct {
		text    string
		refused bool
		logged  int // lines logged so far
	}{
		{text: fmt.Sprintf(problem, "10.0.0.1:7946"), refused: true, logged: 1},
		{text: fmt.Sprintf(problem, "10.0.0.1:7947"), refused: true, logged: 1},
		{text: fmt.Sprintf(problem, "10.0.0.2:7946"), refused: true, logged: 2},
		{text: "1 error occurred:\n\t* failed to join 10.0.0.3:7946: Remote state is encrypted and encryption is not configured", refused: true, logged: 3},
		{text: "1 error occurred:\n\t* failed to join 10.0.0.3:7946: Remote state is encrypted and encryption is not configured", refused: true, logged: 3},
		{text: "[ERR] memberlist: failed to receive: EOF from=10.0.0.4:7946", refused: false, logged: 3},
	} {
		if got := r.logged(tt.text); got != tt.refused {
			t.Errorf("logged(%q) = %v, want %v", tt.text, got, tt.refused)
		}
		if got := rec.matching("WARN gossip refused"); len(got) != tt.logged {
			t.Errorf("after %q: %d lines logged, want %d: %q", tt.text, len(got), tt.logged, got)
		}
	}
	if got := rec.matching("WARN gossip refused", "peer=10.0.0.3:7946", "has no gossip keyring"); len(got) != 1 {
		t.Errorf("the join error's peer and meaning are not logged: %q", rec.matching("WARN"))
	}
}
