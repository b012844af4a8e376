package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// bootIDPath holds the kernel's random id of the current boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// procIdentity names one process for good: its pid, its start time and
// the boot it runs in. A pid alone is recycled by the kernel; the three
// together never are.
type procIdentity struct {
	PID int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks from boot
	// to the process's start.
	StartTime uint64 `json:"start_time"`
	// BootID is /proc/sys/kernel/random/boot_id when the process ran.
	BootID string `json:"boot_id"`
}

// bootID returns the id of the running boot, read once.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
})

// identify returns the identity of process pid, which may have ended but
// not been waited for yet (a zombie keeps its pid and start time).
func identify(pid int) (procIdentity, error) {
	id, _, err := identifyState(pid)
	return id, err
}

// identifyState is identify, also returning the process's state letter.
func identifyState(pid int) (procIdentity, byte, error) {
	boot, err := bootID()
	if err != nil {
		return procIdentity{}, 0, err
	}
	state, start, err := procStat(pid)
	if err != nil {
		return procIdentity{}, 0, err
	}
	return procIdentity{PID: pid, StartTime: start, BootID: boot}, state, nil
}

// verify returns nil when the process id names still runs: this boot, a
// live (not zombie) process with that pid and that start time. Otherwise
// it returns an error wrapping errProcessGone, and the pid, whoever holds
// it now, must not be signalled.
func (id procIdentity) verify() error {
	if id.PID <= 0 {
		return fmt.Errorf("verify process %d: %w", id.PID, errProcessGone)
	}
	now, state, err := identifyState(id.PID)
	switch {
	case err != nil:
		return fmt.Errorf("verify process %d: %w", id.PID, errProcessGone)
	case state == 'Z' || state == 'X':
		return fmt.Errorf("verify process %d: it has ended: %w", id.PID, errProcessGone)
	case now.BootID != id.BootID:
		return fmt.Errorf("verify process %d: started in boot %s, this is boot %s: %w",
			id.PID, id.BootID, now.BootID, errProcessGone)
	case now.StartTime != id.StartTime:
		return fmt.Errorf("verify process %d: start time %d, want %d (pid recycled): %w",
			id.PID, now.StartTime, id.StartTime, errProcessGone)
	}
	return nil
}

// procStat returns the state letter (field 3) and start time (field 22)
// of /proc/<pid>/stat.
func procStat(pid int) (byte, uint64, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, 0, err
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse stat of process %d: start time: %w", pid, err)
	}
	return fields[0][0], start, nil
}

// procGroup returns the process group (field 5 of /proc/<pid>/stat) of
// process pid, which a zombie still shows.
func procGroup(pid int) (int, error) {
	fields, err := procStatFields(pid)
	if err != nil {
		return 0, err
	}
	pgrp, err := strconv.Atoi(fields[2])
	if err != nil {
		return 0, fmt.Errorf("parse stat of process %d: process group: %w", pid, err)
	}
	return pgrp, nil
}

// procStatFields returns the fields of /proc/<pid>/stat from field 3
// (the state) on. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
func procStatFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, fmt.Errorf("read stat of process %d: %w", pid, errProcessGone)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse stat of process %d: no ')'", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return nil, fmt.Errorf("parse stat of process %d: %d fields", pid, len(fields)+2)
	}
	return fields, nil
}
