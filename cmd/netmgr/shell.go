package main

import (
	"github.com/urfave/cli/v2"
)

// shellCommand is netmgr shell.
func shellCommand() *cli.Command {
	return &cli.Command{
		Name:      "shell",
		Usage:     "run a command (default your login shell) inside a running job",
		UsageText: "netmgr shell [options] JOB [-- CMD [ARG...]]",
		Flags:     append([]cli.Flag{&cli.IntFlag{Name: "instance", Usage: "the instance `N` to enter"}}, clientFlags()...),
		Action:    func(*cli.Context) error { return usagef("not yet") },
	}
}
