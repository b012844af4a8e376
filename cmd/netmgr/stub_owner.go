package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/stub"
	"github.com/netmgr/netmgr/stub/owner"
)

// ownerDescription is the owner policy's part of netmgr stub --help.
const ownerDescription = "Owner policy: with --sleep-on-login, --sleep-on-input, --sleep-on-load or\n" +
	"--load-monitor the machine goes to sleep while its owner uses it: no new work is\n" +
	"placed there, netstatus -m shows, for example, 'asleep (console login)', and the\n" +
	"jobs running there are suspended at once (SIGSTOP of their process groups). They\n" +
	"resume if the machine wakes within --vacate-after; after that, restartable jobs\n" +
	"are stopped and started elsewhere, and others are killed with the reason\n" +
	"'owner returned', or stay suspended until the machine wakes with --keep-suspended.\n" +
	"With --available the machine is lent only in its owner's time windows, and\n" +
	"sleeps ('asleep (outside window)') outside them; a window's end is an owner's\n" +
	"return for the jobs running there. HTCondor's desktop policy is, for example,\n\n" +
	"   --sleep-on-input 15m --sleep-on-load 0.3 --vacate-after 10m\n\n" +
	"Each setting can also be given in the --init file (sleep_on_input=15m,\n" +
	"available={\"Sat-Sun\"}, keep_suspended=yes) and on the machine or its mtype in the\n" +
	"database; they merge as a machine's attributes do: flags < init file < database\n" +
	"(the machine's declaration over its mtype's), so the administrator's policy wins\n" +
	"and a flag sets what nothing else does. A database loaded at run time takes\n" +
	"effect with the next lease renewal. A queue (add_q) may set vacate_after,\n" +
	"keep_suspended or suspend=no (vacate at once) for its own jobs.\n\n"

// ownerFlags are netmgr stub's owner-policy flags.
func ownerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "sleep-on-login", Usage: "sleep while a console or terminal session is open (utmp) and for `DURATION` after the last logout"},
		&cli.DurationFlag{Name: "sleep-on-input", Usage: "sleep while the keyboard, mouse or a terminal was used within `DURATION`"},
		&cli.Float64Flag{Name: "sleep-on-load", Usage: "sleep while the load average not caused by this stub's jobs is over `LOAD`"},
		&cli.StringFlag{Name: "load-monitor", Usage: "`PROGRAM` run every --load-monitor-interval: it prints a number (the load) or sleep [REASON] or wake"},
		&cli.DurationFlag{Name: "load-monitor-interval", Value: owner.DefaultMonitorEvery, Usage: "run --load-monitor every `DURATION`"},
		&cli.StringFlag{Name: "utmp", Value: owner.DefaultUtmp, Usage: "utmp `FILE` --sleep-on-login reads"},
		&cli.StringSliceFlag{Name: "input-devices", Value: cli.NewStringSlice(owner.DefaultInputGlobs...),
			Usage: "input devices and terminals (`GLOB`s) whose access times --sleep-on-input reads"},
		&cli.StringFlag{Name: "available", Usage: "lend the machine only in these `WINDOWS`, separated by ';' (\"Mon-Fri 18:00-08:00; Sat-Sun\"), in its local time; outside them it sleeps"},
		&cli.DurationFlag{Name: "vacate-after", Value: stub.DefaultVacateAfter, Usage: "vacate jobs suspended for the owner after `DURATION` asleep"},
		&cli.BoolFlag{Name: "keep-suspended", Usage: "keep non-restartable jobs suspended past --vacate-after instead of killing them"},
	}
}

// ownerConfig reads the owner-policy flags.
func ownerConfig(cCtx *cli.Context) (owner.Config, error) {
	c := owner.Config{
		SleepOnLogin: cCtx.Duration("sleep-on-login"),
		SleepOnInput: cCtx.Duration("sleep-on-input"),
		SleepOnLoad:  cCtx.Float64("sleep-on-load"),
		LoadMonitor:  cCtx.String("load-monitor"),
		MonitorEvery: cCtx.Duration("load-monitor-interval"),
		Utmp:         cCtx.String("utmp"),
		InputGlobs:   splitList(cCtx.StringSlice("input-devices")),
	}
	for w := range strings.SplitSeq(cCtx.String("available"), ";") {
		if w = strings.TrimSpace(w); w != "" {
			c.Available = append(c.Available, w)
		}
	}
	if err := c.Check(); err != nil {
		return c, usagef("%v", err)
	}
	if c.MonitorEvery <= 0 {
		return c, usagef("--load-monitor-interval must be positive, got %v", c.MonitorEvery)
	}
	if d := cCtx.Duration("vacate-after"); d < 0 {
		return c, usagef("--vacate-after must not be negative, got %v", d)
	}
	return c, nil
}
