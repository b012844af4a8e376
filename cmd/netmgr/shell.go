package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"

	"github.com/netmgr/netmgr/client"
	"github.com/urfave/cli/v2"
)

// shellCommand is netmgr shell.
func shellCommand() *cli.Command {
	return &cli.Command{
		Name:      "shell",
		Usage:     "run a command (default your login shell) inside a running job",
		UsageText: "netmgr shell [options] JOB [-- CMD [ARG...]]",
		Description: "Runs CMD inside a running instance of JOB, as the job runs: as its user (never\n" +
			"as root for a user's job), in its directory, with its environment, in its\n" +
			"cgroup. Without CMD it runs the login shell of the job's user. With a terminal\n" +
			"on stdin it gets a terminal of its own (raw mode, your window size); without,\n" +
			"plain streams. It ends when CMD ends, and is killed with the instance. Only the\n" +
			"job's owner and admins may. Exits with CMD's status.\n\n" +
			"   netmgr shell 42                       # look around a running job\n" +
			"   netmgr shell --instance 3 42 -- cat /proc/self/cgroup\n\n" + retryNote,
		Flags:  append([]cli.Flag{&cli.IntFlag{Name: "instance", Usage: "the instance `N` to enter"}}, clientFlags()...),
		Action: runShell,
	}
}

func runShell(cCtx *cli.Context) error {
	if cCtx.NArg() < 1 {
		return usagef("shell takes a JOB (a name or id), then optionally -- CMD [ARG...]")
	}
	args := cCtx.Args().Slice()
	ref, command := args[0], args[1:]
	if len(command) > 0 && command[0] == "--" {
		command = command[1:]
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	tty := terminalOf(os.Stdin)
	q := client.SessionQuery{Instance: cCtx.Int("instance"), Shell: true, ID: hex.EncodeToString(id[:]), Command: command, Event: "opened"}
	if tty != nil {
		q.TTY = true
		q.Rows, q.Cols = windowSize(tty)
	}
	return runSession(cCtx.Context, c, ref, q, sessionEnds{
		stdin: os.Stdin, stdout: cCtx.App.Writer, stderr: cCtx.App.ErrWriter, tty: tty, errw: cCtx.App.ErrWriter,
	})
}
