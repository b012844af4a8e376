package supervisor

import (
	"time"

	"github.com/netmgr/netmgr/internal/procinfo"
)

// memInterval is how often a supervisor measures the memory of a job that
// has a memory limit.
const memInterval = 250 * time.Millisecond

// groupRSS returns the resident memory in KB of process group pgid,
// reading /proc/<pid>/stat of every process once. A process that ends
// during the walk counts for nothing.
func groupRSS(fs procinfo.FS, pgid int) (int64, error) {
	pids, err := fs.AllPIDs()
	if err != nil {
		return 0, err
	}
	var kb int64
	for _, pid := range pids {
		st, err := fs.Stat(pid)
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if st.PGRP == pgid {
			kb += int64(st.ResidentMemory()) / 1024
		}
	}
	return kb, nil
}
