package main

import (
	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/stub"
)

// superviseCommand is the supervisor role of the binary: the stub runs
// each attempt under `netmgr supervise`, which outlives a stub restart.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Usage:     "supervise one job for the stub (internal: the stub starts it)",
		Hidden:    true,
		UsageText: "netmgr supervise --dir DIR",
		Description: "Runs the job described by DIR/spec.json in its own process group (and its own\n" +
			"cgroup where the host offers cgroup v2), waits for it, enforces its queue limits,\n" +
			"kills whatever it leaves running, and writes DIR/state.json and DIR/result.json.\n" +
			"The stub starts one per attempt, in a session of its own, so that a restart of\n" +
			"the stub leaves the job running; a new stub reattaches through DIR/sock.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the attempt's supervisor `DIR` (required)"},
		},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unexpected argument %q", cCtx.Args().First())
			}
			if err := requireFlags(cCtx, "dir"); err != nil {
				return err
			}
			return stub.Supervise(cCtx.String("dir"))
		},
	}
}
