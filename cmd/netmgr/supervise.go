package main

import (
	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/stub/supervisor"
)

// superviseCommand is the supervisor role of the binary: the stub runs
// its attempts under `netmgr supervise --host`, which outlives a stub
// restart, and an attempt under `netmgr supervise --dir` when no host can
// be started.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Usage:     "supervise the stub's jobs (internal: the stub starts it)",
		Hidden:    true,
		UsageText: "netmgr supervise --host ROOT | --dir DIR",
		Description: "With --dir, runs the job described by DIR/spec.json in its own process group\n" +
			"(and its own cgroup where the host offers cgroup v2), waits for it, enforces its\n" +
			"queue limits, kills whatever it leaves running, and writes DIR/state.json and\n" +
			"DIR/result.json; a stub reattaches through DIR/sock.\n\n" +
			"With --host, does the same for every attempt the stub asks for on ROOT/host-2.sock,\n" +
			"ROOT being the stub's attempts directory, and exits once no stub holds it and no\n" +
			"job runs. The stub starts it in a session of its own, so that a restart of the\n" +
			"stub leaves the jobs running.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the attempt's supervisor `DIR`"},
			&cli.StringFlag{Name: "host", Usage: "serve the attempts of the stub's attempts directory `ROOT`"},
		},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unexpected argument %q", cCtx.Args().First())
			}
			switch dir, root := cCtx.String("dir"), cCtx.String("host"); {
			case dir != "" && root != "":
				return usagef("give --dir or --host, not both")
			case root != "":
				return supervisor.RunHost(root)
			case dir != "":
				return supervisor.RunAttempt(dir)
			}
			return usagef("give --dir DIR or --host ROOT")
		},
	}
}
