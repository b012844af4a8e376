package servertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(ports), 20; got != want {
		t.Fatalf("got %d ports, want %d", got, want)
	}
	seen := map[int]bool{}
	lo, hi := fixedPortRange()
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Errorf("port %d: zero or repeated in %v", p, ports)
		}
		if hi > lo && (p < lo || p >= hi) {
			t.Errorf("port %d: outside [%d, %d), below the ephemeral range", p, lo, hi)
		}
		seen[p] = true
	}
}

func TestPoll(t *testing.T) {
	tests := []struct {
		name    string
		after   int // cond turns true on this call; 0 = never
		wantErr error
	}{
		{"at once", 1, nil},
		{"third call", 3, nil},
		{"never", 0, ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := poll(300*time.Millisecond, func(ctx context.Context) bool {
				calls++
				return calls == tt.after
			})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// A binary that exits at once must make StartProcCluster fail fast,
// naming the process, rather than wait for its ports.
func TestStartProcClusterExitedBinary(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	c, err := StartProcCluster("/bin/false", dir, 1, 0)
	if err == nil {
		c.Stop()
		t.Fatal("got no error for a binary that exits, want one")
	}
	if !errors.Is(err, ErrExited) {
		t.Errorf("got error %v, want %v", err, ErrExited)
	}
	if !strings.Contains(err.Error(), "server1") {
		t.Errorf("error %q does not name server1", err)
	}
	if d := time.Since(start); d > startTimeout/2 {
		t.Errorf("took %v to notice the exit", d)
	}
	data, err := os.ReadFile(filepath.Join(dir, "server1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "--bootstrap-expect 1") {
		t.Errorf("log does not record the command line:\n%s", data)
	}
}
