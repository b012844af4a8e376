package stub

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/netmgr/netmgr/client"
	"golang.org/x/sys/unix"
)

// leaseFile, in the stub's DataDir, holds the deadline of the stub's lease
// as the stub last renewed it. Restartable jobs' supervisors read it, so a
// lease that runs out stops those jobs even when the stub itself is dead:
// the servers restart them elsewhere once it has expired on their side.
const leaseFile = "lease"

// leaseCheckInterval is how often a supervisor reads the lease file.
const leaseCheckInterval = 200 * time.Millisecond

// leaseRecord is the lease file's content. The deadline is on the boot
// clock (CLOCK_BOOTTIME), which every process on the machine shares, which
// never steps, and which keeps counting through a suspend.
type leaseRecord struct {
	ValidUntilBootNS int64 `json:"valid_until_boot_ns"`
}

// bootNow reads CLOCK_BOOTTIME.
func bootNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("clock_gettime(CLOCK_BOOTTIME): " + err.Error()) // present on every Linux since 2.6.39
	}
	return time.Duration(ts.Nano())
}

// writeLease records the lease's deadline, sent being when the granted
// renewal was sent on the boot clock.
func writeLease(dataDir string, sent, lease time.Duration) error {
	return replaceJSONFile(filepath.Join(dataDir, leaseFile), leaseRecord{ValidUntilBootNS: int64(sent + lease)})
}

// enforceLease stops the job when the stub's lease runs out: it SIGKILLs
// it, with the lease as the reason. Without a lease file (a stub that
// never got a lease since the file's directory was made) it assumes a
// lease granted when the job started, as the stub does.
func (s *supervisor) enforceLease() {
	fallback := bootNow() + defaultLease
	t := time.NewTicker(leaseCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.exited:
			return
		case <-t.C:
		}
		deadline := fallback
		var rec leaseRecord
		switch err := readJSONFile(s.spec.LeaseFile, &rec); {
		case err == nil:
			deadline = time.Duration(rec.ValidUntilBootNS)
		case !errors.Is(err, fs.ErrNotExist):
			s.log.Warn("cannot read the lease file; keeping the last deadline", "err", err)
			continue
		}
		if bootNow() >= deadline {
			s.endForLimit(unix.SIGKILL, client.ReasonLeaseExpired)
			return
		}
	}
}
