package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfEvents are the counters perfWindow reads: CPU time (task-clock,
// in ms), and counts that what else runs on the machine changes little:
// context switches and page faults. (Instructions are not among them: a
// VM without hardware counters, like the one this was written on, has
// none to give; perf then says "<not supported>".)
const perfEvents = "task-clock,context-switches,page-faults"

// perfCounts holds the counters of one perf window, keyed "ROLE EVENT",
// and the window's length.
type perfCounts struct {
	values  map[string]float64
	elapsed time.Duration
}

// less takes off what idle, a window of the idle cluster, counts for as
// long as p's window lasted.
func (p *perfCounts) less(idle perfCounts) {
	f := float64(p.elapsed) / float64(idle.elapsed)
	for k, x := range idle.values {
		p.values[k] -= x * f
	}
}

// perfCounter is one running perf stat: the role it counts, its control
// and ack pipes, and the file it writes its counts to.
type perfCounter struct {
	role     string
	cmd      *exec.Cmd
	ctl, ack *os.File
	out      string
}

// perfWindow counts perfEvents in each role's processes of pids (and the
// children they fork meanwhile) while run runs, one perf stat per role.
// Each perf attaches with its counters off; they are switched on just
// before run and off just after, through perf's control pipe, so that
// neither perf's attaching nor its exit is counted.
func perfWindow(ctx context.Context, pids map[string][]int, run func() error) (perfCounts, error) {
	var cs []*perfCounter
	defer func() {
		for _, c := range cs {
			if c.cmd.Process != nil && c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
			_ = c.ctl.Close()
			_ = c.ack.Close()
			_ = os.Remove(c.out)
		}
	}()
	for _, role := range startCPURoles {
		if len(pids[role]) == 0 {
			return perfCounts{}, fmt.Errorf("perf: no %s process", role)
		}
		var list []string
		for _, pid := range pids[role] {
			list = append(list, strconv.Itoa(pid))
		}
		c, err := startPerf(ctx, role, strings.Join(list, ","))
		if err != nil {
			return perfCounts{}, err
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		if err := perfControl(c.ctl, c.ack, "enable"); err != nil {
			return perfCounts{}, err
		}
	}
	start := time.Now()
	err := run()
	elapsed := time.Since(start)
	for _, c := range cs {
		if err := perfControl(c.ctl, c.ack, "disable"); err != nil {
			return perfCounts{}, err
		}
	}
	if err != nil {
		return perfCounts{}, err
	}
	out := perfCounts{values: make(map[string]float64), elapsed: elapsed}
	for _, c := range cs {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		_ = c.cmd.Wait()
		if err := readPerf(c.out, c.role, out.values); err != nil {
			return perfCounts{}, err
		}
	}
	return out, nil
}

// startPerf starts perf stat on the processes of list (comma-separated
// pids), its counters off, its control pipe on descriptors 3 and 4.
func startPerf(ctx context.Context, role, list string) (*perfCounter, error) {
	f, err := os.CreateTemp("", "perf-"+role+"-")
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	_ = f.Close()
	var open []*os.File // closed, with the file removed, should perf not start
	fail := func(err error) (*perfCounter, error) {
		for _, p := range open {
			_ = p.Close()
		}
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("perf: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	open = append(open, ctlR, ctlW)
	ackR, ackW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	open = append(open, ackR, ackW)
	cmd := exec.CommandContext(ctx, "perf", "stat", "-x,", "-e", perfEvents, "-D", "-1",
		"--control", "fd:3,4", "-o", f.Name(), "-p", list)
	cmd.ExtraFiles = []*os.File{ctlR, ackW}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	_ = ctlR.Close()
	_ = ackW.Close()
	return &perfCounter{role: role, cmd: cmd, ctl: ctlW, ack: ackR, out: f.Name()}, nil
}

// perfControl sends perf the command cmd on ctl and waits for its ack.
func perfControl(ctl, ack *os.File, cmd string) error {
	if _, err := ctl.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("perf %s: %w", cmd, err)
	}
	_ = ack.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 5)
	n, err := ack.Read(buf)
	if err != nil {
		return fmt.Errorf("perf %s: no ack: %w", cmd, err)
	}
	if !strings.HasPrefix(string(buf[:n]), "ack") {
		return fmt.Errorf("perf %s: answered %q", cmd, buf[:n])
	}
	return nil
}

// readPerf adds the counters of perf stat's -x, output file to values,
// keyed "ROLE EVENT".
func readPerf(path, role string, values map[string]float64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := 0
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if len(fields) < 3 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if fields[0] == "<not supported>" {
			continue
		}
		x, err := 0.0, error(nil) // <not counted>: the processes did not run
		if fields[0] != "<not counted>" {
			x, err = strconv.ParseFloat(fields[0], 64)
		}
		if err != nil {
			return fmt.Errorf("perf %s: %q: %w", role, sc.Text(), err)
		}
		values[role+" "+fields[2]] += x
		found++
	}
	if found == 0 {
		b, _ := os.ReadFile(path)
		return fmt.Errorf("perf %s: %w in %s: %q", role, errors.New("no counters"), filepath.Base(path), b)
	}
	return sc.Err()
}
