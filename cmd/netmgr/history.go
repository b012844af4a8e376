package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
)

// historyTimeLayout prints start and end times in the history table.
const historyTimeLayout = "2006-01-02T15:04:05"

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:  "history",
		Usage: "show how past attempts ended (accounting, like sacct): owner, machine, exit, CPU, memory",
		UsageText: "netmgr history [--user U] [--state S] [--since T] [--until T] [--queue Q]\n" +
			"    [--machine M] [--job ID] [--json] [JOB|ID]",
		Description: "Lists every ended attempt of every instance, oldest end first, from the\n" +
			"servers' history, which keeps them after the job has left the database\n" +
			"(--job-retention) for the servers' --history-retention (default 90 days).\n" +
			"Every server holds the whole history, so it survives the loss of any one.\n\n" +
			"   JOB  NAME  INST  ATTEMPT  OWNER  QUEUE  MACHINE  STATE   EXIT  START                END                  ELAPSED  CPU   MAXRSS  REASON  REPLACED-BY  CHECKPOINT\n" +
			"   12   job1  0     1        alice  -      stub1    failed  3     2026-11-27T10:00:01  2026-11-27T10:00:04  3s       2.1s  12M     -       2            -\n\n" +
			"NAME is the job's symbolic name (--name, symb_name=); EXIT is the exit status, or the signal that ended the attempt; CPU is user\n" +
			"plus system time; MAXRSS the peak resident memory; REASON why the stub or\n" +
			"the servers ended it (a limit, a lost machine, an error); REPLACED-BY the\n" +
			"attempt that ran in its place; CHECKPOINT the size of the checkpoint it\n" +
			"kept (--checkpoint) and when the servers committed it. Times are local.\n\n" +
			"You see your own jobs; an admin_id (or root on a pool machine) sees\n" +
			"everyone's, or one user's with --user. --since and --until bound the end\n" +
			"time: an RFC 3339 time (2026-11-27T10:00:00Z), a date (2026-11-27, local\n" +
			"midnight), or a duration back from now (24h). --state is an end state:\n" +
			"exited, failed, signaled, killed, lost or cancelled. --json prints the\n" +
			"attempts as a JSON list with every field the servers keep.\n\n" +
			"JOB|ID selects one job by id, as --job does, or by name: every job of that\n" +
			"name (or name.owner), the ones the database has let go included, like\n" +
			"sacct --name:\n\n" +
			"   netmgr history backup --since 24h\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "only `USER`'s jobs (admins; others see only their own)"},
			&cli.StringFlag{Name: "state", Usage: "only attempts that ended in `STATE`"},
			&cli.StringFlag{Name: "since", Usage: "only attempts that ended at or after `TIME`"},
			&cli.StringFlag{Name: "until", Usage: "only attempts that ended before `TIME`"},
			&cli.StringFlag{Name: "queue", Usage: "only jobs of `QUEUE`"},
			&cli.StringFlag{Name: "machine", Usage: "only attempts that ran on `MACHINE`"},
			&cli.Uint64Flag{Name: "job", Usage: "only the attempts of job `ID` (also after it has left the database)"},
			&cli.BoolFlag{Name: "json", Usage: "print the attempts as JSON"},
		}, clientFlags()...),
		Action: runHistory,
	}
}

// historyStates are the states an ended attempt can be in.
var historyStates = []string{"exited", "failed", "signaled", "killed", "lost", "cancelled"}

func runHistory(cCtx *cli.Context) error {
	if cCtx.NArg() > 1 {
		return usagef("unexpected argument %q (history takes one JOB|ID)", cCtx.Args().Get(1))
	}
	now := time.Now()
	q := client.HistoryQuery{User: cCtx.String("user"), State: cCtx.String("state"),
		Queue: cCtx.String("queue"), Machine: cCtx.String("machine"), Job: cCtx.Uint64("job")}
	name := ""
	if ref := cCtx.Args().First(); cCtx.NArg() == 1 {
		if q.Job != 0 {
			return usagef("give --job ID or JOB|ID, not both")
		}
		if strings.HasPrefix(ref, "-") {
			return usagef("options go before JOB|ID, got %q after it", ref)
		}
		if id, err := strconv.ParseUint(ref, 10, 64); err == nil && id > 0 {
			q.Job = id
		} else if name = ref; name == "" {
			return usagef("JOB|ID is empty: give a job name or id")
		}
	}
	if q.State != "" && !contains(historyStates, q.State) {
		return usagef("--state: %q is not an end state (%s)", q.State, strings.Join(historyStates, ", "))
	}
	var err error
	if q.Since, err = parseSince("since", cCtx.String("since"), now); err != nil {
		return err
	}
	if q.Until, err = parseSince("until", cCtx.String("until"), now); err != nil {
		return err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return usagef("--since %s is not before --until %s", cCtx.String("since"), cCtx.String("until"))
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	as, err := c.History(cCtx.Context, q)
	if err != nil {
		return fmt.Errorf("read history: %w", err)
	}
	if name != "" {
		as = historyNamed(as, name)
	}
	if cCtx.Bool("json") {
		if as == nil {
			as = []client.HistoryAttempt{}
		}
		return writeJSON(cCtx.App.Writer, as)
	}
	return renderHistory(cCtx.App.Writer, as, time.Local)
}

// historyNamed keeps the attempts of the jobs named name, or name.owner
// as netstatus writes a job's name.
func historyNamed(as []client.HistoryAttempt, name string) []client.HistoryAttempt {
	var out []client.HistoryAttempt
	for _, a := range as {
		if a.Name != "" && (a.Name == name || a.Name+"."+a.Owner == name) {
			out = append(out, a)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseSince reads a --since or --until TIME against now: RFC 3339, a
// date (local midnight), or a duration back from now; empty is no bound.
func parseSince(flag, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, now.Location()); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("--%s: %q is not a time: write RFC 3339 (2026-11-27T10:00:00Z), a date (2026-11-27) or a duration back from now (24h)", flag, s)
}

// renderHistory writes the history table, times in loc, its text escaped
// (printable): names, owners, queues, machines and reasons.
func renderHistory(w io.Writer, as []client.HistoryAttempt, loc *time.Location) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "JOB\tNAME\tINST\tATTEMPT\tOWNER\tQUEUE\tMACHINE\tSTATE\tEXIT\tSTART\tEND\tELAPSED\tCPU\tMAXRSS\tREASON\tREPLACED-BY\tCHECKPOINT")
	for _, a := range as {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			a.Job, printable(dash(a.Name)), a.Instance, a.Attempt, printable(a.Owner), printable(dash(a.Queue)), printable(dash(a.Machine)),
			printable(a.State), printable(historyExit(a)), historyTime(a.StartedAt, loc), historyTime(a.EndedAt, loc),
			historyElapsed(a), historyCPU(a), historyRSS(a.MaxRSSKB), printable(dash(historyReason(a))),
			historyReplaced(a.ReplacedBy), historyCheckpoint(a, loc))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func historyExit(a client.HistoryAttempt) string {
	switch {
	case a.Signal != "":
		return a.Signal
	case a.StartedAt.IsZero():
		return "-" // it never ran
	}
	return strconv.Itoa(a.ExitCode)
}

func historyTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(historyTimeLayout)
}

func historyElapsed(a client.HistoryAttempt) string {
	if a.StartedAt.IsZero() || a.EndedAt.Before(a.StartedAt) {
		return "-"
	}
	return a.EndedAt.Sub(a.StartedAt).Round(time.Second).String()
}

func historyCPU(a client.HistoryAttempt) string {
	if a.UserMS == 0 && a.SysMS == 0 {
		return "-"
	}
	return (time.Duration(a.UserMS+a.SysMS) * time.Millisecond).Round(10 * time.Millisecond).String()
}

func historyRSS(kb int64) string {
	if kb <= 0 {
		return "-"
	}
	return formatMemory((kb + 1023) / 1024)
}

func historyReason(a client.HistoryAttempt) string {
	parts := make([]string, 0, 2)
	for _, s := range []string{a.Reason, a.Error} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

func historyReplaced(n uint64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatUint(n, 10)
}

// historyCheckpoint is the checkpoint an attempt kept: its size and when
// the servers committed it, "-" for none.
func historyCheckpoint(a client.HistoryAttempt, loc *time.Location) string {
	if a.CheckpointSize == 0 && a.CheckpointAt.IsZero() {
		return "-"
	}
	return strings.ReplaceAll(files.Size(a.CheckpointSize), " ", "") + "@" + historyTime(a.CheckpointAt, loc)
}
