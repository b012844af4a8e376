package stub

import "testing"

// A job that leaves a process behind: the supervisor kills it when the
// job's first process ends, and the CHILD_TERM names it for the servers.
func TestLeftoversReported(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)
	req := shJob(1, 0, "sleep 600 & p=$!; until [ \"$(cat /proc/$p/comm)\" = sleep ]; do :; done; exit 0")
	mustStart(t, c, req)
	evs := srv.waitTerm(t, keyOf(req))
	term := evs[len(evs)-1]
	if term.ExitCode != 0 || len(term.Leftovers) != 1 {
		t.Fatalf("TERM = %+v, want exit 0 and one leftover", term)
	}
	if l := term.Leftovers[0]; l.Comm != "sleep" || l.PID <= 0 {
		t.Errorf("leftover = %+v, want a sleep process", l)
	}
	if alive(term.Leftovers[0].PID) {
		t.Errorf("leftover %d is still alive", term.Leftovers[0].PID)
	}
}
