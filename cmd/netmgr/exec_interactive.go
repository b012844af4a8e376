package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"github.com/urfave/cli/v2"
)

// interactiveHelp is netexec's help on -i and --pty.
const interactiveHelp = "Interactive work: --pty runs one instance with a pseudo-terminal whose other\n" +
	"end is yours (raw mode, your window size and its changes, Ctrl-C, Ctrl-Z and\n" +
	"Ctrl-\\ reaching the job through the terminal), and exits with the job's exit\n" +
	"status (128+N when signal N ended it); -i connects your stdin, stdout and\n" +
	"stderr to the job without a terminal, bytes intact, the end of your input its\n" +
	"end of input, and Ctrl-C sends it SIGINT:\n\n" +
	"   netexec --pty /bin/bash\n" +
	"   gzip -c data | netexec -i /usr/bin/sha256sum > sum\n\n" +
	"Both wait for a machine as --wait started does, saying after a second what they\n" +
	"wait for. The session goes through any server: when that server goes, netexec\n" +
	"goes on through another, nothing lost. When netexec itself goes (a dropped\n" +
	"network, a closed laptop), the job keeps its terminal for --detach-grace\n" +
	"(default 60s; 0 ends it at once) and `netmgr attach JOB` takes it back; after\n" +
	"the grace the job gets SIGHUP, as a hang-up of its terminal sends it."

// interactiveFlags are netexec's flags for interactive jobs.
func interactiveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "interactive", Aliases: []string{"i"}, Usage: "connect your stdin, stdout and stderr to the job (one instance; no terminal) and exit with its status"},
		&cli.BoolFlag{Name: "pty", Usage: "run the job (one instance) on a pseudo-terminal connected to yours, and exit with its status"},
		&cli.DurationFlag{Name: "detach-grace", Value: session.DefaultGrace, Usage: "with -i or --pty: how long the job keeps its session while no client is attached (`DURATION`; 0 = hang up at once)"},
	}
}

// runInteractive submits the one-instance job of cCtx, waits for it to
// start, and runs its session on the user's terminal or streams.
func runInteractive(cCtx *cli.Context) error {
	tty := cCtx.Bool("pty")
	if tty && cCtx.Bool("interactive") {
		return usagef("-i and --pty exclude each other: --pty gives the job a terminal, -i plain streams")
	}
	if cCtx.IsSet("wait") {
		return usagef("-i and --pty wait for the job themselves; drop --wait")
	}
	if cCtx.IsSet("instances") && cCtx.Int("instances") != 1 {
		return usagef("-i and --pty run one instance, not %d", cCtx.Int("instances"))
	}
	grace := cCtx.Duration("detach-grace")
	if grace < 0 {
		return usagef("--detach-grace must not be negative, got %v", grace)
	}
	term := terminalOf(os.Stdin)
	if tty && term == nil {
		return usagef("--pty needs a terminal on stdin; use -i for pipes and files")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("resolve relative paths: %w", err)
	}
	req, err := jobRequest(cCtx, cwd)
	if err != nil {
		return err
	}
	if req.Spec.Cron != "" {
		return usagef("-i and --pty run now, not on a schedule: drop --cron")
	}
	mode := session.Mode{TTY: tty, Grace: grace}
	if tty {
		mode.Rows, mode.Cols = windowSize(term)
		if t := os.Getenv("TERM"); t != "" && !hasEnv(req.Spec.Env, "TERM") {
			req.Spec.Env = append(req.Spec.Env, "TERM="+t)
		}
	}
	req.Spec.Env = append(req.Spec.Env, session.EnvVar+"="+mode.String())
	archive, err := stageCopyIn(&req.Spec, cwd)
	if err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	if err := sendCopyIn(cCtx.Context, c, archive); err != nil {
		return err
	}
	resp, err := c.Submit(cCtx.Context, req)
	if err != nil {
		return fmt.Errorf("submit job: %w", err)
	}
	ref := strconv.FormatUint(resp.ID, 10)
	// The job's streams are the user's: nothing else goes to stdout.
	job, err := waitStarted(cCtx.Context, c, ref, io.Discard, prefixed(cCtx.App.ErrWriter, "job "+ref+" "))
	if err != nil {
		return fmt.Errorf("wait for job %d: %w", resp.ID, err)
	}
	q := client.SessionQuery{Event: "opened"}
	for _, in := range job.Instances {
		if in.Index == 0 {
			if in.State != client.InstanceRunning {
				return fmt.Errorf("job %d did not run: %s", resp.ID, describeStart(in))
			}
			q.Attempt = in.Attempt
		}
	}
	var stdin io.Reader = os.Stdin
	return runSession(cCtx.Context, c, ref, q, sessionEnds{
		stdin: stdin, stdout: cCtx.App.Writer, stderr: cCtx.App.ErrWriter, tty: term, errw: cCtx.App.ErrWriter,
	})
}

// hasEnv reports whether env sets name.
func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if len(kv) > len(name) && kv[:len(name)+1] == name+"=" {
			return true
		}
	}
	return false
}

// prefixed writes each write to w after prefix.
func prefixed(w io.Writer, prefix string) io.Writer { return &prefixWriter{w: w, prefix: prefix} }

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// attachCommand is netmgr attach.
func attachCommand() *cli.Command {
	return &cli.Command{
		Name:      "attach",
		Usage:     "take back the terminal (or streams) of an interactive job",
		UsageText: "netmgr attach [options] JOB",
		Description: "Connects to the session of a job started with netexec --pty or -i whose client\n" +
			"went away (a dropped network, a closed laptop): the output the job wrote\n" +
			"meanwhile comes first, then you are where netexec was. The job keeps its\n" +
			"session for its --detach-grace while no one is attached, then gets SIGHUP.\n" +
			"Only the job's owner and admins may attach. Exits with the job's status.\n\n" +
			"   netmgr attach 42\n\n" + retryNote,
		Flags:  append([]cli.Flag{&cli.IntFlag{Name: "instance", Usage: "the instance `N` to attach to"}}, clientFlags()...),
		Action: runAttach,
	}
}

func runAttach(cCtx *cli.Context) error {
	if cCtx.NArg() != 1 {
		return usagef("attach takes one JOB (a name or id), got %d arguments", cCtx.NArg())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	ref := cCtx.Args().First()
	return runSession(cCtx.Context, c, ref, client.SessionQuery{Instance: cCtx.Int("instance"), Event: "attached"}, sessionEnds{
		stdin: os.Stdin, stdout: cCtx.App.Writer, stderr: cCtx.App.ErrWriter, tty: terminalOf(os.Stdin), errw: cCtx.App.ErrWriter,
	})
}
