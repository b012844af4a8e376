package lease

import "time"

// restartHold is a restart lease this leadership granted: from is when
// its StubRestarting was committed, grace its length.
type restartHold struct {
	from  time.Time
	grace time.Duration
}

// Hold records a restart lease granted to machine, committed at from.
func (t *Table) Hold(machine string, from time.Time, grace time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holds == nil {
		t.holds = make(map[string]restartHold)
	}
	t.holds[machine] = restartHold{from: from, grace: grace}
}

// RestartGrace is the restart lease a restarting machine may hold: the
// one this leadership granted, or MaxRestartGrace when an earlier leader
// granted it.
func (t *Table) RestartGrace(machine string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.holds[machine]; ok {
		return h.grace
	}
	return MaxRestartGrace
}

// RestartExpired reports whether a restarting machine's restart lease has
// certainly run out: it was granted for the grace from when the stub sent
// its request, which arrived before the last renewal this leadership
// counts (or before this leadership began).
func (t *Table) RestartExpired(machine string, now time.Time) bool {
	return t.Silence(machine, now) > t.RestartGrace(machine)+Margin
}

// Back reports whether the stub of a restarting machine is its new
// incarnation: it echoed a token issued after the restart was committed.
// The stub that stopped sent its last renewal before it asked for the
// restart lease, so it never echoes such a token; the new one lowered the
// lease file to a lease of its own before its first renewal (see
// stub.lowerLease), so the machine's lease is the plain one again. When
// an earlier leader granted the restart, every token of this leadership
// was issued after it.
func (t *Table) Back(machine string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	from := t.since
	if h, ok := t.holds[machine]; ok {
		from = h.from
	}
	for _, p := range t.proof[machine] {
		if !p.issued.Before(from) {
			return true
		}
	}
	return false
}
