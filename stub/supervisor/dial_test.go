package supervisor

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An attempt is reached on the socket its state names: that of the host
// that started it, even when this stub's host would listen elsewhere.
func TestDialSupervisorNamedInState(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "1.0.1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "host-0.sock")
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := writeJSONFile(filepath.Join(dir, stateFile), attemptState{Sock: other}); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	go func() {
		if c, err := ln.Accept(); err == nil {
			close(accepted)
			_ = c.Close()
		}
	}()
	conn, err := dialSupervisor(t.Context(), dir)
	if err != nil {
		t.Fatalf("dialSupervisor: %v", err)
	}
	defer conn.Close()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the socket named in state.json took no connection")
	}
}
