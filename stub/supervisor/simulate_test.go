package supervisor

import (
	"log/slog"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSimulatedPause checks that time a simulated job spends stopped does
// not count towards its run time.
func TestSimulatedPause(t *testing.T) {
	j := &simJob{log: slog.New(slog.DiscardHandler), left: time.Hour, resume: time.Now().Add(-10 * time.Minute), ended: make(chan struct{})}
	j.mu.Lock()
	j.armLocked()
	j.mu.Unlock()
	t.Cleanup(func() {
		j.mu.Lock()
		j.endLocked(Result{})
		j.mu.Unlock()
	})

	j.signal(unix.SIGSTOP, 0)
	j.mu.Lock()
	left, stopped := j.left, j.resume.IsZero()
	j.mu.Unlock()
	if !stopped || left > 50*time.Minute || left < 49*time.Minute {
		t.Fatalf("after STOP: stopped %v, run time left %v; want stopped with about 50m left", stopped, left)
	}
	j.signal(unix.SIGSTOP, 0) // a second STOP changes nothing
	j.signal(unix.SIGCONT, 0)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.resume.IsZero() || j.left != left || j.over {
		t.Errorf("after CONT: running %v, left %v, ended %v; want running with %v left", !j.resume.IsZero(), j.left, j.over, left)
	}
}
