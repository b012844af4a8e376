package stub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// DefaultScriptTimeout is how long a prologue or epilogue may run when
// Config.ScriptTimeout is not set; one that runs longer is killed and
// counts as failed.
const DefaultScriptTimeout = time.Minute

// The two site scripts, as they name themselves in the environment
// (NETMGR_SCRIPT), the log and a drained machine's reason.
const (
	scriptPrologue = "prologue"
	scriptEpilogue = "epilogue"
)

// errPrologue marks a Start that failed because the prologue did: the
// machine's fault, so the servers queue the instance again uncounted.
var errPrologue = errors.New("prologue failed")

// siteScripts are the site's prologue and epilogue (Config.Prologue,
// Config.Epilogue), which the stub runs as its own user (root in a real
// deployment) before and after every attempt, as Slurm runs its Prolog and
// Epilog: a failing one drains the machine (healthWatch.scriptFailed).
// The zero value runs nothing. Safe for concurrent use: each run is a
// process of its own.
type siteScripts struct {
	prologue, epilogue string
	timeout            time.Duration
	log                *slog.Logger
}

// scriptAttempt is what the scripts learn of the attempt they run for,
// in their environment.
type scriptAttempt struct {
	k       client.AttemptRef
	jobName string
	owner   string
	execDir string
	// end is how the attempt ended, for the epilogue; nil for the
	// prologue.
	end *client.ChildEvent
}

// runPrologue runs the prologue for attempt a, if there is one. It
// returns an error wrapping errPrologue, whose text is the drained
// machine's reason, when the prologue failed. It blocks until the
// prologue ends, at most the script timeout.
func (s *siteScripts) runPrologue(ctx context.Context, machine string, a scriptAttempt) error {
	if s == nil || s.prologue == "" {
		return nil
	}
	if problem := s.run(ctx, scriptPrologue, s.prologue, machine, a); problem != "" {
		return fmt.Errorf("%w: %s", errPrologue, strings.TrimPrefix(problem, scriptPrologue+" failed: "))
	}
	return nil
}

// runEpilogue runs the epilogue for attempt a, which has ended, if there
// is one, and returns the drained machine's reason when it failed, ""
// when it passed. It blocks until the epilogue ends, at most the script
// timeout.
func (s *siteScripts) runEpilogue(ctx context.Context, machine string, a scriptAttempt) string {
	if s == nil || s.epilogue == "" {
		return ""
	}
	return s.run(ctx, scriptEpilogue, s.epilogue, machine, a)
}

// run runs program as script which for attempt a with the job's identity
// in its environment and logs its output, a line at a time. It returns
// the problem, "prologue failed: PROGRAM exit status 3: first line of
// output", or "" when it exited 0. A program still running after the
// timeout is killed, and has failed.
func (s *siteScripts) run(ctx context.Context, which, program, machine string, a scriptAttempt) string {
	timeout := s.timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out limitedBuffer
	cmd := exec.CommandContext(ctx, program)
	cmd.Env = scriptEnv(which, machine, a)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second // a grandchild holding the pipe open does not hang us
	start := time.Now()
	err := cmd.Run()
	for line := range strings.SplitSeq(strings.TrimRight(out.String(), "\n"), "\n") {
		if line != "" {
			s.log.Info(which+" output", "attempt", a.k, "line", line)
		}
	}
	var exit *exec.ExitError
	problem := ""
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		problem = fmt.Sprintf("%s failed: %s timed out after %v", which, program, timeout)
	case err != nil && !errors.As(err, &exit):
		problem = fmt.Sprintf("%s failed: cannot run %s: %v", which, program, err)
	case err != nil:
		problem = fmt.Sprintf("%s failed: %s %v", which, program, exit.ProcessState)
		if line := firstLine(out.String()); line != "" {
			problem += ": " + line
		}
	}
	if problem != "" {
		s.log.Warn(which+" failed", "attempt", a.k, "problem", problem, "took", time.Since(start))
		return problem
	}
	s.log.Debug(which+" passed", "attempt", a.k, "took", time.Since(start))
	return ""
}

// scriptEnv is the environment of a prologue or epilogue: the stub's PATH
// and the attempt's identity, as Slurm gives its Prolog SLURM_JOB_ID and
// SLURM_JOB_USER: NETMGR_SCRIPT (prologue or epilogue), NETMGR_JOB_ID,
// NETMGR_JOB_NAME, NETMGR_INSTANCE, NETMGR_ATTEMPT, NETMGR_OWNER and
// NETMGR_USER (both the job's owner), NETMGR_MACHINE and NETMGR_EXEC_DIR;
// the epilogue also gets NETMGR_EXIT_CODE, and NETMGR_SIGNAL and
// NETMGR_REASON when set.
func scriptEnv(which, machine string, a scriptAttempt) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"NETMGR_SCRIPT=" + which,
		"NETMGR_JOB_ID=" + strconv.FormatUint(a.k.JobID, 10),
		"NETMGR_JOB_NAME=" + a.jobName,
		"NETMGR_INSTANCE=" + strconv.Itoa(a.k.Instance),
		"NETMGR_ATTEMPT=" + strconv.FormatUint(a.k.Attempt, 10),
		"NETMGR_OWNER=" + a.owner,
		"NETMGR_USER=" + a.owner,
		"NETMGR_MACHINE=" + machine,
		"NETMGR_EXEC_DIR=" + a.execDir,
	}
	if e := a.end; e != nil {
		env = append(env, "NETMGR_EXIT_CODE="+strconv.Itoa(e.ExitCode))
		if e.Signal != "" {
			env = append(env, "NETMGR_SIGNAL="+e.Signal)
		}
		if e.Reason != "" {
			env = append(env, "NETMGR_REASON="+e.Reason)
		}
	}
	return env
}
