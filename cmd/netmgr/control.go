package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

// controlAction is one of the job-control commands: what it is called, the
// past tense it prints and the client call that does it.
type controlAction struct {
	name    string // suspend, resume, restart
	done    string // suspended, resumed, restarted
	usage   string
	explain string
	call    func(c *client.Client, ctx context.Context, ref string) (client.ControlResponse, error)
}

var (
	suspendAction = controlAction{
		name: "suspend", done: "suspended",
		usage: "stop a job's running instances (SIGSTOP); they keep their slots",
		explain: "Sends SIGSTOP to the process group of every running instance of each job\n" +
			"named, by symbolic name (its one live job) or by id. The\n" +
			"instances show as suspended in netstatus -j and keep their machine slots until\n" +
			"netmgr resume continues them. Only the job's owner or an administrator may.",
		call: (*client.Client).Suspend,
	}
	resumeAction = controlAction{
		name: "resume", done: "resumed",
		usage: "continue a suspended job (SIGCONT)",
		explain: "Sends SIGCONT to the process group of every suspended instance of each job\n" +
			"named, by symbolic name or by id. Only the job's owner or an administrator may.",
		call: (*client.Client).Resume,
	}
	restartAction = controlAction{
		name: "restart", done: "restarted",
		usage: "end every instance's current attempt and start a new one",
		explain: "Ends the current attempt of every instance of each job named, by symbolic\n" +
			"name or by id, and starts a new attempt of each, which the scheduler places\n" +
			"again. Only the job's owner or an administrator may.",
		call: (*client.Client).Restart,
	}
)

func suspendCommand() *cli.Command { return controlCommand(suspendAction) }
func resumeCommand() *cli.Command  { return controlCommand(resumeAction) }
func restartCommand() *cli.Command { return controlCommand(restartAction) }

// controlCommand builds the command for a.
func controlCommand(a controlAction) *cli.Command {
	return &cli.Command{
		Name:      a.name,
		Usage:     a.usage,
		UsageText: "netmgr " + a.name + " [options] JOB|ID...",
		Description: a.explain + "\n\nIt prints, for example:\n\n" +
			"   $ netmgr " + a.name + " job4\n" +
			"   job 4: 3 instances " + a.done + "\n\n" + retryNote,
		Flags:  clientFlags(),
		Action: func(cCtx *cli.Context) error { return runControl(cCtx, a) },
	}
}

// runControl applies a to each job named, in order, and stops at the first
// that fails.
func runControl(cCtx *cli.Context, a controlAction) error {
	refs := cCtx.Args().Slice()
	if len(refs) == 0 {
		return usagef("missing JOB or ID")
	}
	for _, r := range refs {
		if strings.HasPrefix(r, "-") {
			return usagef("options go before JOB|ID, got %q after it", r)
		}
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		resp, err := a.call(c, cCtx.Context, ref)
		if err != nil {
			return fmt.Errorf("%s job %s: %w", a.name, printable(ref), err)
		}
		if _, err := fmt.Fprintf(cCtx.App.Writer, "job %d: %s %s\n", resp.ID, plural(resp.Affected), a.done); err != nil {
			return err
		}
	}
	return nil
}
