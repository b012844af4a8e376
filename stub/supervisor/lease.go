package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// leaseFile, in the stub's DataDir, holds the deadline of the stub's lease
// as the stub last renewed it. Restartable jobs' supervisors read it, so a
// lease that runs out stops those jobs even when the stub itself is dead:
// the servers restart them elsewhere once it has expired on their side.
const leaseFile = "lease"

// DefaultLease is the lease a stub assumes until a server tells it
// otherwise (the server's LeaseResponse carries the real values), and
// that a supervisor assumes, from its job's start, while the stub has
// written no lease file.
const DefaultLease = 3 * time.Second

// LeasePath is the lease file of the stub whose DataDir is dataDir: what
// Spec.LeaseFile names.
func LeasePath(dataDir string) string { return filepath.Join(dataDir, leaseFile) }

// leaseCheckInterval is how often a supervisor reads the lease file.
const leaseCheckInterval = 200 * time.Millisecond

// leaseRecord is the lease file's content. The deadline is on the boot
// clock (CLOCK_BOOTTIME), which every process on the machine shares, which
// never steps, and which keeps counting through a suspend.
type leaseRecord struct {
	ValidUntilBootNS int64 `json:"valid_until_boot_ns"`
}

// BootNow reads CLOCK_BOOTTIME, the clock of lease deadlines. It does not
// block.
func BootNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("clock_gettime(CLOCK_BOOTTIME): " + err.Error()) // present on every Linux since 2.6.39
	}
	return time.Duration(ts.Nano())
}

// WriteLease records the stub's lease deadline in the lease file of
// dataDir, for the supervisors of its restartable jobs: sent is when the
// granted renewal was sent, on the boot clock (BootNow). The file is
// replaced atomically, not synced: a deadline on the boot clock means
// nothing after a reboot.
func WriteLease(dataDir string, sent, lease time.Duration) error {
	return replaceJSONFile(LeasePath(dataDir), leaseRecord{ValidUntilBootNS: int64(sent + lease)})
}

// LowerLease makes the lease file of dataDir end no later than until (on
// the boot clock), leaving an earlier deadline as it is, and reports
// whether there was a file. A stub starting again calls it before it
// renews or rejoins: the file may still hold the longer lease the servers
// granted its previous incarnation for the restart, and once the new stub
// renews the servers count only the plain lease.
func LowerLease(dataDir string, until time.Duration) (bool, error) {
	var rec leaseRecord
	switch err := readJSONFile(LeasePath(dataDir), &rec); {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return true, fmt.Errorf("lower the lease: %w", err)
	}
	if time.Duration(rec.ValidUntilBootNS) <= until {
		return true, nil
	}
	if err := replaceJSONFile(LeasePath(dataDir), leaseRecord{ValidUntilBootNS: int64(until)}); err != nil {
		return true, fmt.Errorf("lower the lease: %w", err)
	}
	return true, nil
}
