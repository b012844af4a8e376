package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

// signalNames are the signals netkill accepts, without the SIG prefix.
var signalNames = map[string]bool{
	"ABRT": true, "ALRM": true, "CONT": true, "HUP": true, "INT": true, "KILL": true,
	"QUIT": true, "STOP": true, "TERM": true, "TSTP": true, "USR1": true, "USR2": true,
	"WINCH": true,
}

func killCommand() *cli.Command {
	return &cli.Command{
		Name:  "kill",
		Usage: "kill a job: signal its running instances and drop its queued ones",
		UsageText: "netkill [--signal SIG] [--all] [--runs] JOB|ID...\n" +
			"netmgr kill [--signal SIG] [--all] [--runs] JOB|ID...",
		Description: "Kills every instance of each job named, by symbolic name or by id. A name\n" +
			"means its one live (queued, held or running) job; when several live jobs have\n" +
			"it, netkill lists them and kills none unless --all is given, which kills them\n" +
			"all. Running instances get SIG (TERM by default) and, after a grace period,\n" +
			"KILL; queued instances never start. For example:\n\n" +
			"   netkill job1\n" +
			"   netkill --signal INT 42\n" +
			"   netkill --all nightly\n\n" +
			"Killing a cron job ends its schedule: it fires no more. Its runs, jobs of their\n" +
			"own (NAME.OWNER#N), go on unless --runs is given, which kills the running and\n" +
			"queued ones too:\n\n" +
			"   netkill --runs backup\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "signal", Aliases: []string{"s"}, Usage: "first `SIG`nal to send, e.g. TERM, INT, HUP, KILL (default TERM)"},
			&cli.BoolFlag{Name: "all", Usage: "kill every live job a name matches, not only when it matches one"},
			&cli.BoolFlag{Name: "runs", Usage: "for a cron job: kill its running and queued runs too, not only its schedule"},
		}, clientFlags()...),
		Action: runKill,
	}
}

// normalizeSignal turns "sigint", "SIGINT" or "int" into "INT"; "" stays
// "" (the server's default).
func normalizeSignal(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "SIG")
	if !signalNames[n] {
		known := make([]string, 0, len(signalNames))
		for k := range signalNames {
			known = append(known, k)
		}
		sort.Strings(known)
		return "", usagef("--signal: unknown signal %q (known: %s)", s, strings.Join(known, " "))
	}
	return n, nil
}

func runKill(cCtx *cli.Context) error {
	refs := cCtx.Args().Slice()
	if len(refs) == 0 {
		return usagef("missing JOB or ID")
	}
	for _, r := range refs {
		if strings.HasPrefix(r, "-") {
			return usagef("options go before JOB|ID, got %q after it", r)
		}
	}
	sig, err := normalizeSignal(cCtx.String("signal"))
	if err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	if cCtx.Bool("all") {
		if refs, err = expandNames(cCtx.Context, c, refs); err != nil {
			return err
		}
	}
	for _, ref := range refs {
		resp, err := c.Kill(cCtx.Context, ref, client.KillRequest{Signal: sig, Runs: cCtx.Bool("runs")})
		if err != nil {
			return fmt.Errorf("kill job %s: %w", printable(ref), err)
		}
		fmt.Fprintf(cCtx.App.Writer, "job %d: signalled %s, dequeued %d\n", resp.ID, plural(resp.Signaled), resp.Dequeued)
	}
	return nil
}

// expandNames replaces each name among refs by the ids of its live jobs
// (queued, held or running), for netkill --all; ids, and names with no
// live job (the server then answers for the name), stay as they are.
func expandNames(ctx context.Context, c *client.Client, refs []string) ([]string, error) {
	var jobs []client.Job
	var out []string
	for _, ref := range refs {
		if _, err := strconv.ParseUint(ref, 10, 64); err == nil {
			out = append(out, ref)
			continue
		}
		if jobs == nil {
			var err error
			if jobs, err = c.Jobs(ctx); err != nil {
				return nil, fmt.Errorf("list jobs named %s: %w", printable(ref), err)
			}
		}
		n := len(out)
		for _, j := range jobs {
			if j.Name == ref && (j.State == client.JobQueued || j.State == client.JobHeld || j.State == client.JobRunning) {
				out = append(out, strconv.FormatUint(j.ID, 10))
			}
		}
		if len(out) == n {
			out = append(out, ref)
		}
	}
	return out, nil
}
