package stub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// DefaultHealthCheckEvery is how often the site's health-check program
// runs when Config.HealthCheckEvery is not set.
const DefaultHealthCheckEvery = time.Minute

// healthCheckOutput bounds what is kept of the program's output.
const healthCheckOutput = 4096

// runChecks runs the health-check program at once and then every
// programEvery until ctx ends, recording its problem. It returns at once
// when the stub has no program.
func (h *healthWatch) runChecks(ctx context.Context) {
	if h.program == "" {
		return
	}
	tick := time.NewTicker(h.programEvery)
	defer tick.Stop()
	for {
		h.setCheck(runHealthCheck(ctx, h.program, h.programEvery))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runHealthCheck runs the health-check program, as Slurm runs its
// HealthCheckProgram: a program that exits non-zero or prints anything
// reports a problem, which is "health check: " and the first line it
// printed (or how it ended, when it printed nothing); "" when it passed.
// It is killed after timeout. It blocks until the program ends.
func runHealthCheck(ctx context.Context, program string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out limitedBuffer
	cmd := exec.CommandContext(ctx, program)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second // a grandchild holding the pipe open does not hang us
	err := cmd.Run()
	line := firstLine(out.String())
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("health check: %s timed out after %v", program, timeout)
	case ctx.Err() != nil:
		return "" // the stub is stopping
	case err != nil && !errors.As(err, &exit):
		return fmt.Sprintf("health check: cannot run %s: %v", program, err)
	case line != "":
		return "health check: " + line
	case err != nil:
		return fmt.Sprintf("health check: %s %v", program, exit.ProcessState)
	}
	return ""
}

// firstLine is the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// limitedBuffer keeps the first healthCheckOutput bytes written to it and
// drops the rest. It is written by exec's copying goroutines, one at a
// time for a shared Stdout and Stderr.
type limitedBuffer struct{ b bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := healthCheckOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return l.b.String() }
