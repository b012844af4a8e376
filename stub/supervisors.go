package stub

import (
	"context"
	"time"

	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// supervisors is how the runner reaches the supervisors of its attempts,
// each named by its supervisor directory <DataDir>/attempts/<job>.<instance>.<attempt>:
// a *supervisor.Client, whose supervisor host forks the jobs in a process
// of its own, or in a simulated stub a *supervisor.Simulator. The methods
// are safe for concurrent use.
type supervisors interface {
	// Start starts spec as the attempt of dir and returns once its job
	// runs or could not be started (Started.Error).
	Start(dir string, spec supervisor.Spec) (supervisor.Started, error)
	// Signal sends sig to the attempt's job and, when grace is positive,
	// SIGKILL after grace if the job is still alive.
	Signal(ctx context.Context, dir string, sig unix.Signal, grace time.Duration) error
	// Wait asks the attempt's supervisor for the job's result, blocking
	// until the job has ended or ctx ends.
	Wait(ctx context.Context, dir string) (supervisor.Result, error)
	// Outcome returns the attempt's result without asking its
	// supervisor: an error wrapping supervisor.ErrRunning while the
	// supervisor runs, another error when it is gone without a result.
	Outcome(dir string) (supervisor.Result, error)
	// KillLeftovers kills what may be left of the job of an attempt whose
	// supervisor is gone, and returns what it killed.
	KillLeftovers(dir string) []supervisor.Leftover
	// Exec runs a command inside the attempt's running job (netmgr
	// shell) and returns its pid and where its result comes.
	Exec(ctx context.Context, dir string, e supervisor.Exec) (int, <-chan supervisor.Result, error)
	// Close lets go of the supervisors; their jobs run on.
	Close()
}

var (
	_ supervisors = (*supervisor.Client)(nil)
	_ supervisors = (*supervisor.Simulator)(nil)
)
