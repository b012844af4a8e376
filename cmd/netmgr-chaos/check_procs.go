package main

import (
	"bufio"
	"fmt"
	"strings"
)

// psScript prints the shell's own pid, the stub's pid and every process
// of the container; run with `docker exec C sh -c psScript`.
const psScript = `echo "self $$"; echo "stub $(cat /run/stub.pid 2>/dev/null)"; ps -o pid,ppid,stat,args`

// proc is one line of ps output.
type proc struct {
	PID, PPID string
	Stat      string
	Args      string
}

// leftovers reads psScript's output and returns the processes that are
// neither the container's init, the stub's entrypoint loop, the stub
// itself, the stub's supervisor host nor the docker exec that asked:
// after the suite, with every job ended, anything else was left behind.
func leftovers(out string) ([]proc, error) {
	var self, stub string
	var procs []proc
	header := false
	s := bufio.NewScanner(strings.NewReader(out))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if v, ok := strings.CutPrefix(line, "self "); ok {
			self = strings.TrimSpace(v)
			continue
		}
		if v, ok := strings.CutPrefix(line, "stub"); ok && !header {
			stub = strings.TrimSpace(v)
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "PID" {
			header = true
			continue
		}
		if !header || len(f) < 4 {
			return nil, fmt.Errorf("read ps output: unexpected line %q", line)
		}
		procs = append(procs, proc{PID: f[0], PPID: f[1], Stat: f[2], Args: strings.Join(f[3:], " ")})
	}
	if !header || self == "" {
		return nil, fmt.Errorf("read ps output: no process list in %q", out)
	}
	entry := ""
	for _, p := range procs {
		if p.PPID == "1" && strings.Contains(p.Args, "/chaos/stub.sh") {
			entry = p.PID
		}
	}
	var left []proc
	for _, p := range procs {
		switch {
		case p.PID == "1", p.PID == self, p.PPID == self, stub != "" && p.PID == stub, p.PID == entry:
		case p.PPID == entry && p.Args == "sleep 1": // the loop between two stub runs
		case stub != "" && strings.Contains(p.Args, "supervise --host "):
			// The stub's supervisor host: it exits once no stub holds it
			// and no job runs. Its parent is the stub that started it,
			// or init once that stub has been restarted.
		default:
			left = append(left, p)
		}
	}
	return left, nil
}
