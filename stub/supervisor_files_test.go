package stub

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/netmgr/netmgr/stub/supervisor"
)

// The tests of this package read and write a supervisor directory's files
// as a stub of another build would find them: by their on-disk format,
// not through package supervisor's code.

// procID is a process's identity as state.json records it.
type procID struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id"`
}

// stateFile is a supervisor directory's state.json.
type stateFile struct {
	Supervisor  procID    `json:"supervisor"`
	Job         procID    `json:"job"`
	StartedAt   time.Time `json:"started_at"`
	Restartable bool      `json:"restartable,omitempty"`
}

// identify returns the identity of live process pid.
func identify(t testing.TB, pid int) procID {
	t.Helper()
	id, err := identity(pid)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func identity(pid int) (procID, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return procID{}, err
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procID{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return procID{}, err
	}
	return procID{PID: pid, StartTime: st.Starttime, BootID: strings.TrimSpace(string(boot))}, nil
}

// runs reports whether the process id names still runs: alive, with that
// start time.
func (id procID) runs() bool {
	now, err := identity(id.PID)
	return err == nil && now == id && alive(id.PID)
}

// procState returns the state letter of process pid ('R', 'S', 'T', 'Z'...).
func procState(pid int) (byte, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	if st.State == "" {
		return 0, fmt.Errorf("process %d: no state", pid)
	}
	return st.State[0], nil
}

// alive reports whether pid names a live process (not a zombie).
func alive(pid int) bool {
	state, err := procState(pid)
	return err == nil && state != 'Z' && state != 'X'
}

// readState reads the state.json of supervisor directory dir.
func readState(t testing.TB, dir string) stateFile {
	t.Helper()
	var st stateFile
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// writeState writes st as the state.json of supervisor directory dir,
// making dir.
func writeState(t testing.TB, dir string, st stateFile) {
	t.Helper()
	b, err := json.Marshal(st)
	if err == nil {
		err = os.MkdirAll(dir, 0o700)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// readResult reads the result.json of supervisor directory dir.
func readResult(dir string) (supervisor.Result, error) {
	var res supervisor.Result
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return res, err
	}
	return res, json.Unmarshal(b, &res)
}

// hostsReaped returns channels closed once the supervisor hosts s started
// have exited.
func hostsReaped(s *Stub) []<-chan struct{} {
	c, ok := s.runner.sup.(*supervisor.Client)
	if !ok {
		return nil
	}
	return c.HostsReaped()
}
