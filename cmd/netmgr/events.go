package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

// eventTimeLayout prints event times in UTC to the millisecond.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:      "events",
		Usage:     "show committed events (elections, machines joining and leaving, instances starting and ending, admin changes)",
		UsageText: "netmgr events [--follow] [--json] [--after INDEX] [--since TIME]",
		Description: "Prints the committed events, one per line, oldest first, from the servers'\n" +
			"history: every server keeps them, across restarts and leader changes, for\n" +
			"its --history-retention (default 90 days):\n\n" +
			"   2026-11-22T07:01:02.123Z  #812  machine-unreachable  machine=stub3  lease expired\n\n" +
			"Times are the UTC times of the commands; #N is the Raft index. Kinds:\n" +
			"leader-elected, machine-joined, machine-left, machine-unreachable,\n" +
			"machine-back, machine-unhealthy (its stub drains it, with the reason),\n" +
			"machine-healthy, machine-asleep (its owner policy put it to sleep, with the\n" +
			"reason), machine-awake, instance-placed, instance-started, instance-ended,\n" +
			"instance-failed, instance-killed, instance-lost, instance-unknown,\n" +
			"instance-restarted, instance-fenced (a report from a superseded attempt,\n" +
			"ignored), job-submitted, job-killed, job-released (its dependencies let a\n" +
			"held job run), job-cancelled (one means it never can, with the reason),\n" +
			"cron-fired (a cron job's firing started a run), cron-skipped (a firing made no\n" +
			"run: missed while no server led, or the previous run still runs), cron-ended\n" +
			"(netkill ended the schedule);\n" +
			"mail-sent, mail-failed (a send the leader retries, with the relay's answer),\n" +
			"mail-dropped (given up after 12 attempts, or pushed out by more than 1000\n" +
			"pending);\n" +
			"session-opened, session-attached, session-closed (an interactive session or a\n" +
			"netmgr shell, with the user who opened, took back or closed it);\n" +
			"policy-error (a call of the site policy script that failed, with its\n" +
			"line; the same failure at most once a minute); and\n" +
			"the changes admins make, each with\n" +
			"the admin's name: database-loaded, queue-added, queue-changed,\n" +
			"queue-removed, server-removed, token-issued, token-revoked,\n" +
			"policy-loaded, policy-cleared:\n\n" +
			"   2026-11-24T10:00:00.000Z  #907  token-issued  admin root issued token 3f9a12bc for bob, expires 2026-12-24 10:00 UTC\n\n" +
			"--since shows only the events at or after TIME: an RFC 3339 time, a date\n" +
			"(local midnight) or a duration back from now (1h).\n" +
			"--follow keeps printing events as they are committed, following the\n" +
			"leader through failovers, until interrupted. --json prints one JSON object\n" +
			"per line with keys index, at, kind, job, instance, attempt, machine, detail.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep streaming new events"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per line"},
			&cli.Uint64Flag{Name: "after", Usage: "show only events after Raft `INDEX`"},
			&cli.StringFlag{Name: "since", Usage: "show only events at or after `TIME`"},
		}, clientFlags()...),
		Action: runEvents,
	}
}

func runEvents(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q (events takes only options)", cCtx.Args().First())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	since, err := parseSince("since", cCtx.String("since"), time.Now())
	if err != nil {
		return err
	}
	printEvent := eventPrinter(cCtx.App.Writer, cCtx.Bool("json"))
	show := func(e client.Event) error {
		if e.At.Before(since) {
			return nil
		}
		return printEvent(e)
	}
	after := cCtx.Uint64("after")
	if cCtx.Bool("follow") {
		err := c.FollowEvents(cCtx.Context, after, show)
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: the normal end of --follow
		}
		if err != nil {
			return fmt.Errorf("follow events: %w", err)
		}
		return nil
	}
	evs, err := c.EventsSince(cCtx.Context, after, since)
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	for _, e := range evs {
		if err := show(e); err != nil {
			return err
		}
	}
	return nil
}

// eventPrinter returns a function writing one event per line to w.
func eventPrinter(w io.Writer, asJSON bool) func(client.Event) error {
	enc := json.NewEncoder(w)
	return func(e client.Event) error {
		var err error
		if asJSON {
			err = enc.Encode(e)
		} else {
			_, err = fmt.Fprintln(w, formatEvent(e))
		}
		if err != nil {
			return fmt.Errorf("print event: %w", err)
		}
		return nil
	}
}

// formatEvent renders an event as one line: time, index, kind, what it
// names, detail; the kind, machine and detail are escaped (printable), as
// the detail quotes names and reasons users chose.
func formatEvent(e client.Event) string {
	var names []string
	if e.Job != 0 {
		names = append(names, fmt.Sprintf("job=%d", e.Job))
	}
	if e.Instance >= 0 && e.Job != 0 {
		names = append(names, fmt.Sprintf("instance=%d", e.Instance))
	}
	if e.Attempt != 0 {
		names = append(names, fmt.Sprintf("attempt=%d", e.Attempt))
	}
	if e.Machine != "" {
		names = append(names, "machine="+printable(e.Machine))
	}
	parts := []string{e.At.UTC().Format(eventTimeLayout), fmt.Sprintf("#%d", e.Index), printable(e.Kind)}
	if len(names) > 0 {
		parts = append(parts, strings.Join(names, " "))
	}
	if e.Detail != "" {
		parts = append(parts, printable(e.Detail))
	}
	return strings.Join(parts, "  ")
}
