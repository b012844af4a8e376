package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a job instance's standard output or error, following it while it runs",
		UsageText: "netmgr logs [--instance N] [--stderr] [-f] JOB|ID",
		Description: "Prints what an instance of the job wrote to its standard output (with\n" +
			"--stderr, its standard error) in its current attempt, or its last one once it\n" +
			"runs no more. The output stays on the machine that ran it, in the attempt's\n" +
			"exec dir; a server fetches it from that machine's stub and passes it on, so\n" +
			"no route to the machine is needed. Only the job's owner or an admin may read\n" +
			"it. For example:\n\n" +
			"   netmgr logs 42\n" +
			"   netmgr logs --instance 3 --stderr sim\n" +
			"   netmgr logs -f 42\n\n" +
			"-f follows a running instance: lines are printed as the job writes them, and\n" +
			"the command ends (status 0) when the attempt ends; an instance that has not\n" +
			"started yet is waited for. A finished job's output can be read until its\n" +
			"machine removes the exec dir, the exec retention after the end (24 h unless\n" +
			"the stub's --exec-retention says otherwise); then logs says so. A stream that\n" +
			"breaks (a server or the machine went) ends with status 1.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "instance", Aliases: []string{"i"}, Usage: "the instance `N` to read, from 0"},
			&cli.BoolFlag{Name: "stderr", Usage: "read standard error instead of standard output"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing while the attempt runs; end when it ends"},
		}, clientFlags()...),
		Action: runLogs,
	}
}

func runLogs(cCtx *cli.Context) error {
	args := cCtx.Args().Slice()
	switch {
	case len(args) == 0:
		return usagef("missing JOB or ID")
	case strings.HasPrefix(args[len(args)-1], "-") || len(args) > 1 && strings.HasPrefix(args[1], "-"):
		return usagef("options go before JOB|ID, got %q after it", args[len(args)-1])
	case len(args) > 1:
		return usagef("one JOB or ID at a time, got %d", len(args))
	}
	inst := cCtx.Int("instance")
	if inst < 0 {
		return usagef("--instance %d: instances are numbered from 0", inst)
	}
	q := client.LogsQuery{Instance: inst, Stream: client.LogStdout, Follow: cCtx.Bool("follow")}
	if cCtx.Bool("stderr") {
		q.Stream = client.LogStderr
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	body, err := c.Logs(cCtx.Context, args[0], q)
	if err != nil {
		return fmt.Errorf("logs of job %s: %w", printable(args[0]), err)
	}
	defer body.Close()
	// The stream is copied as it is, unescaped, unlike every other text
	// this package prints: it is the job's own output, which the user
	// asked to see byte for byte (colours, progress bars and all), as
	// cat would show the file. What netmgr itself says about it (errors)
	// is escaped by run.
	if _, err := io.Copy(cCtx.App.Writer, body); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: a normal end of -f
		}
		return fmt.Errorf("logs of job %s: the stream broke: %w", printable(args[0]), err)
	}
	return nil
}
