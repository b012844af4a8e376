package supervisor

import "errors"

// Sentinel errors. Test with errors.Is.
var (
	// ErrRunning means an attempt has no result yet and its supervisor
	// still runs (Outcome).
	ErrRunning = errors.New("supervisor runs: no result yet")
	// ErrClosed means the Client was closed and starts nothing.
	ErrClosed = errors.New("supervisor client is closed")
	// ErrFiles means an attempt could not start because its files could
	// not be made (the supervisor directory, the job's output files, the
	// state file): the machine's fault, not the job's (Started.Fault).
	ErrFiles = errors.New("cannot make the attempt's files")

	// errProcessGone means a process is no longer the one recorded: it
	// ended, or its pid now names another process, or the machine booted.
	errProcessGone = errors.New("process gone")
	// errNoResult means a supervisor directory holds no result yet.
	errNoResult = errors.New("no result")
	// errNoAttempt answers a signal or wait for an attempt the host does
	// not run: its result is written, or it never started there.
	errNoAttempt = errors.New("no such attempt here")
	// errHostRunning means a supervisor host already listens on the
	// directory's socket.
	errHostRunning = errors.New("supervisor host: another host listens here")
	// errHostGone means a start reached no host able to take it: nothing
	// was started, and the stub may start another host and try again.
	errHostGone = errors.New("supervisor host gone")
)
