package servertest

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// machineKillTimeout bounds how long killMachine keeps finding and killing
// the processes of a machine.
const machineKillTimeout = 10 * time.Second

// killMachine SIGKILLs every process of the machine a stub stands for (see
// machineProcs) until none is left alive, and returns when the first
// SIGKILL went out. stub is the stub's pid, 0 when it does not run.
func killMachine(stub int, dataDir string) (time.Time, error) {
	fsys, err := procfs.NewDefaultFS()
	if err != nil {
		return time.Time{}, fmt.Errorf("kill machine: %w", err)
	}
	sessions := make(map[int]bool)
	var first time.Time
	deadline := time.Now().Add(machineKillTimeout)
	for {
		pids, err := machineProcs(fsys, stub, dataDir, sessions)
		if err != nil {
			return first, fmt.Errorf("kill machine: %w", err)
		}
		if len(pids) == 0 {
			return first, nil
		}
		if first.IsZero() {
			first = time.Now()
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				return first, fmt.Errorf("kill machine: process %d: %w", pid, err)
			}
		}
		if time.Now().After(deadline) {
			return first, fmt.Errorf("kill machine: processes %v still alive after %v: %w", pids, machineKillTimeout, ErrTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// machineProcs returns the live (not zombie) processes of the machine a
// stub stands for: the stub (pid stub, unless 0), every supervisor (or
// supervisor host) whose --dir, --host or working directory lies under
// dataDir, every process of a supervisor's session (the
// jobs, each in a process group of the supervisor's session), and every
// descendant of these. It adds the supervisors' session ids to sessions,
// so a later call still finds their jobs once the supervisors are dead.
func machineProcs(fsys procfs.FS, stub int, dataDir string, sessions map[int]bool) ([]int, error) {
	procs, err := fsys.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	prefix := filepath.Clean(dataDir) + string(filepath.Separator)
	stats := make(map[int]procfs.ProcStat, len(procs))
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // it ended meanwhile
		}
		stats[p.PID] = st
		args, err := p.CmdLine()
		if err != nil {
			continue
		}
		cwd, _ := p.Cwd() // "" when unreadable: the arguments decide
		if isSupervisorOf(args, cwd, prefix) {
			sessions[st.Session] = true
		}
	}
	mine := make(map[int]bool)
	for pid, st := range stats {
		if pid == stub || sessions[st.Session] {
			mine[pid] = true
		}
	}
	// Descendants: a job that made a session of its own is still a child of
	// its supervisor (a child subreaper) or of a process found already.
	for grew := true; grew; {
		grew = false
		for pid, st := range stats {
			if !mine[pid] && mine[st.PPID] {
				mine[pid] = true
				grew = true
			}
		}
	}
	var out []int
	for pid := range mine {
		if st := stats[pid]; st.State != "Z" && st.State != "X" {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out, nil
}

// isSupervisorOf reports whether a process with command line args and
// working directory cwd is a supervisor (`netmgr supervise --dir DIR`, or
// the stub's supervisor host, `netmgr supervise --host ROOT`) of the stub whose
// data directory is prefix: its DIR or its working directory (the
// attempts directory or DIR) lies under prefix.
func isSupervisorOf(args []string, cwd, prefix string) bool {
	if !slices.Contains(args, "supervise") {
		return false
	}
	under := func(p string) bool {
		return p != "" && strings.HasPrefix(filepath.Clean(p)+string(filepath.Separator), prefix)
	}
	for _, flag := range []string{"--dir", "--host"} {
		if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) && under(args[i+1]) {
			return true
		}
	}
	return under(cwd)
}
