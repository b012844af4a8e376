package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show jobs (-j, the default), machines (-m) or servers (-s)",
		UsageText: "netstatus [-j|-m|-s] [--json]\n" +
			"netmgr status [-j|-m|-s] [--json]",
		Description: "Prints one table:\n\n" +
			"   netstatus -j   jobs: ID, JOB NAME (name.owner), BINARY NAME, WHERE, STATE,\n" +
			"                  one row per started instance and one 'N instances queued' row\n" +
			"   netstatus -m   machines: NAME, ARCH, CPUS, MEMORY, LOAD, RUNNING, STATE\n" +
			"   netstatus -s   servers: NAME, ADDRESS, ROLE, TERM, LAST INDEX, LEADER\n\n" +
			"--json prints a JSON array of objects instead, one per row (for -j one per\n" +
			"instance, queued ones included), with keys named like the columns.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "show jobs and their instances (default)"},
			&cli.BoolFlag{Name: "machines", Aliases: []string{"m"}, Usage: "show the machines of the pool"},
			&cli.BoolFlag{Name: "servers", Aliases: []string{"s"}, Usage: "show the server group"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
		}, clientFlags()...),
		Action: runStatus,
	}
}

func runStatus(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q (netstatus takes only options)", cCtx.Args().First())
	}
	view := "jobs"
	n := 0
	for _, v := range []string{"jobs", "machines", "servers"} {
		if cCtx.Bool(v) {
			view = v
			n++
		}
	}
	if n > 1 {
		return usagef("give only one of -j, -m and -s")
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	asJSON := cCtx.Bool("json")
	w := cCtx.App.Writer
	switch view {
	case "machines":
		ms, err := c.Machines(cCtx.Context)
		if err != nil {
			return fmt.Errorf("list machines: %w", err)
		}
		if asJSON {
			return renderMachinesJSON(w, ms)
		}
		return renderMachines(w, ms)
	case "servers":
		ss, err := c.Servers(cCtx.Context)
		if err != nil {
			return fmt.Errorf("list servers: %w", err)
		}
		if asJSON {
			return renderServersJSON(w, ss)
		}
		return renderServers(w, ss)
	default:
		jobs, err := c.Jobs(cCtx.Context)
		if err != nil {
			return fmt.Errorf("list jobs: %w", err)
		}
		if asJSON {
			return renderJobsJSON(w, jobs)
		}
		return renderJobs(w, jobs)
	}
}
