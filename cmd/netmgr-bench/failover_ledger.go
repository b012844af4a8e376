package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ledgerScript is the machine-loss job, run as `/bin/sh -c ledgerScript
// failover LEDGER`: it appends "start MACHINE ATTEMPT TIME" to the ledger
// file, sleeps 600 s, and appends "end MACHINE ATTEMPT TIME" when it gets
// SIGTERM. TIME is Unix seconds with nanoseconds, from date(1). A SIGKILL
// (the machine's loss) leaves no end.
const ledgerScript = `echo "start $NETMGR_MACHINE $NETMGR_ATTEMPT $(date +%s.%N)" >>"$1"
trap 'echo "end $NETMGR_MACHINE $NETMGR_ATTEMPT $(date +%s.%N)" >>"$1"; exit 0' TERM
sleep 600 &
wait`

// ledgerLine is one line of a ledger.
type ledgerLine struct {
	Kind    string // "start" or "end"
	Machine string
	Attempt uint64
	At      time.Time
}

// parseLedger parses a ledger's lines. A last line without its newline is
// one being written and is left out.
func parseLedger(data string) ([]ledgerLine, error) {
	var out []ledgerLine
	lines := strings.Split(data, "\n")
	for i, line := range lines[:len(lines)-1] {
		f := strings.Fields(line)
		if len(f) != 4 || (f[0] != "start" && f[0] != "end") {
			return nil, fmt.Errorf("ledger line %d: %q is not KIND MACHINE ATTEMPT TIME", i+1, line)
		}
		attempt, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ledger line %d: attempt: %w", i+1, err)
		}
		at, err := parseUnixTime(f[3])
		if err != nil {
			return nil, fmt.Errorf("ledger line %d: %w", i+1, err)
		}
		out = append(out, ledgerLine{Kind: f[0], Machine: f[1], Attempt: attempt, At: at})
	}
	return out, nil
}

// parseUnixTime parses "SECONDS.NANOSECONDS" as date +%s.%N prints it.
func parseUnixTime(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: %w", s, err)
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		frac += strings.Repeat("0", 9-len(frac))
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, fmt.Errorf("time %q: %w", s, err)
		}
	}
	return time.Unix(n, ns), nil
}

// overlaps returns the ledger lines that show two attempts of the
// instance alive at once around a machine's loss: a line of attempt old
// or earlier written after dead, when every process of the lost machine
// was dead, and a start of a later attempt written before dead.
func overlaps(lines []ledgerLine, old uint64, dead time.Time) []ledgerLine {
	var out []ledgerLine
	for _, l := range lines {
		switch {
		case l.Attempt <= old && l.At.After(dead):
			out = append(out, l)
		case l.Attempt > old && l.Kind == "start" && !l.At.After(dead):
			out = append(out, l)
		}
	}
	return out
}

// findStart returns the start line of attempt, if the ledger has one.
func findStart(lines []ledgerLine, attempt uint64) (ledgerLine, bool) {
	for _, l := range lines {
		if l.Kind == "start" && l.Attempt == attempt {
			return l, true
		}
	}
	return ledgerLine{}, false
}
