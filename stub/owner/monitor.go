package owner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// reasonMonitor is the verdict of a load monitor that said sleep without
// a reason.
const reasonMonitor = "load monitor"

// monitorWord is what the load monitor said last.
type monitorWord struct {
	// sleep is the reason when it said sleep; wake is set when it said
	// wake; load and hasLoad are the number it printed.
	sleep   string
	wake    bool
	load    float64
	hasLoad bool
}

// parseMonitor reads the first line a load monitor printed: a number, or
// "sleep" with an optional reason, or "wake".
func parseMonitor(out string) (monitorWord, error) {
	line := ""
	for l := range strings.SplitSeq(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	word, rest, _ := strings.Cut(line, " ")
	switch strings.ToLower(word) {
	case "sleep":
		r := strings.TrimSpace(rest)
		if r == "" {
			r = reasonMonitor
		}
		return monitorWord{sleep: r}, nil
	case "wake":
		return monitorWord{wake: true}, nil
	}
	if l, err := strconv.ParseFloat(line, 64); err == nil {
		return monitorWord{load: l, hasLoad: true}, nil
	}
	return monitorWord{}, fmt.Errorf("load monitor printed %q: %w", line, ErrBadMonitorOutput)
}

// runMonitor runs the program, killed after timeout, and reads what it
// said. It blocks until the program ends.
func runMonitor(ctx context.Context, program string, timeout time.Duration) (monitorWord, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, program)
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return monitorWord{}, fmt.Errorf("load monitor %s: timed out after %v", program, timeout)
		}
		return monitorWord{}, fmt.Errorf("load monitor %s: %w", program, err)
	}
	return parseMonitor(out.String())
}
