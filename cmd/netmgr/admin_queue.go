package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

// Errors of admin queue add and set.
var (
	errQueueExists  = errors.New("already exists (netmgr admin queue set changes its limits)")
	errQueueUnknown = errors.New("does not exist (netmgr admin queue add creates it; netstatus -q lists the queues)")
)

// queueFlags are the flags of admin queue add and set.
func queueFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "priority", DefaultText: "0", Usage: "the queue's priority `N`; higher priorities are served first (may be negative)"},
		&cli.Int64Flag{Name: "max-size", DefaultText: "no limit", Usage: "the queue holds at most `N` unfinished jobs (nq_maxsize); 0 = no limit"},
		&cli.Int64Flag{Name: "max-active", DefaultText: "no limit", Usage: "at most `N` instances of the queue run at once (nq_maxactive); 0 = no limit"},
		&cli.StringFlag{Name: "max-run", DefaultText: "no limit", Usage: "an instance runs at most `LIMIT`: whole minutes (200) or a duration (90s, 30m, 2h) (nq_maxrun); 0 = no limit"},
		&cli.Int64Flag{Name: "max-mem", DefaultText: "no limit", Usage: "an instance uses at most `MB` of memory (nq_maxmem); 0 = no limit"},
	}, clientFlags()...)
}

func adminQueueCommand() *cli.Command {
	return &cli.Command{
		Name:  "queue",
		Usage: "add, change or remove a batch queue at run time",
		UsageText: "netmgr admin queue add NAME [--priority N] [--max-size N] [--max-active N] [--max-run LIMIT] [--max-mem MB]\n" +
			"netmgr admin queue set NAME [the same options]\n" +
			"netmgr admin queue remove NAME",
		Description: "Changes the batch queues of the live database, as add_q declares them:\n\n" +
			"   netmgr admin queue add NEW_Q --max-size 120 --max-active 100 --max-run 200 --max-mem 20\n" +
			"   netmgr admin queue set NEW_Q --priority 5\n" +
			"   netmgr admin queue remove NEW_Q\n\n" +
			"netstatus -q shows the queues. Only administrators (admin_id) may change them.",
		Subcommands: []*cli.Command{adminQueueAddCommand(), adminQueueSetCommand(), adminQueueRemoveCommand()},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unknown queue command %q (add, set or remove)", cCtx.Args().First())
			}
			_ = cli.ShowSubcommandHelp(cCtx)
			return usagef("no queue command given (add, set or remove)")
		},
		OnUsageError: onUsageError,
	}
}

func adminQueueAddCommand() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "create a batch queue",
		UsageText: "netmgr admin queue add [options] NAME",
		Description: "Creates queue NAME with the limits given; a limit not given is none. It\n" +
			"refuses a NAME that exists. For example the paper's NEW_Q:\n\n" +
			"   $ netmgr admin queue add NEW_Q --max-size 120 --max-active 100 --max-run 200 --max-mem 20\n" +
			"   queue NEW_Q added: priority 0, max size 120, max active 100, max run 200m, max mem 20M\n\n" +
			"--max-run is whole minutes as in the database (200), or a duration (90s, 30m,\n" +
			"2h). An instance past its run limit gets SIGTERM, then SIGKILL 10 s later;\n" +
			"one past its memory limit is killed. A job asking more memory than the\n" +
			"queue's limit is refused at submit, and a submit beyond max size is refused.\n\n" + retryNote,
		Flags:        queueFlags(),
		Action:       func(cCtx *cli.Context) error { return runAdminQueueSet(cCtx, true) },
		OnUsageError: onUsageError,
	}
}

func adminQueueSetCommand() *cli.Command {
	return &cli.Command{
		Name:      "set",
		Usage:     "change the priority or limits of a batch queue",
		UsageText: "netmgr admin queue set [options] NAME",
		Description: "Changes only the settings given; the others keep their values. 0 removes a\n" +
			"limit. It refuses a NAME that does not exist. For example:\n\n" +
			"   $ netmgr admin queue set NEW_Q --priority 5 --max-run 0\n" +
			"   queue NEW_Q set: priority 5, max size 120, max active 100, max mem 20M\n\n" + retryNote,
		Flags:        queueFlags(),
		Action:       func(cCtx *cli.Context) error { return runAdminQueueSet(cCtx, false) },
		OnUsageError: onUsageError,
	}
}

func adminQueueRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Usage:     "remove an empty batch queue",
		UsageText: "netmgr admin queue remove [options] NAME",
		Description: "Removes queue NAME, which must hold no unfinished job. The default queue\n" +
			"cannot be removed. For example:\n\n" +
			"   $ netmgr admin queue remove NEW_Q\n" +
			"   queue NEW_Q removed\n\n" + retryNote,
		Flags:        clientFlags(),
		Action:       runAdminQueueRemove,
		OnUsageError: onUsageError,
	}
}

// queueName returns the one NAME argument of an admin queue command.
func queueName(cCtx *cli.Context) (string, error) {
	args := cCtx.Args().Slice()
	switch {
	case len(args) == 0:
		return "", usagef("missing queue NAME")
	case strings.HasPrefix(args[0], "-"):
		return "", usagef("%q is not a queue NAME", args[0])
	case len(args) > 1:
		if strings.HasPrefix(args[1], "-") {
			return "", usagef("options go before NAME, got %q after it", args[1])
		}
		return "", usagef("one queue NAME at a time, got %q after it", args[1:])
	}
	return args[0], nil
}

// parseMaxRun reads --max-run: whole minutes ("200", as nq_maxrun) or a
// duration of whole seconds ("90s", "30m", "3h20m"). It returns seconds;
// 0 means no limit.
func parseMaxRun(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > (1<<62)/60 {
			return 0, usagef("--max-run: %s minutes is out of range", s)
		}
		return n * 60, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, usagef("--max-run: %q is neither whole minutes (200) nor a duration (90s, 30m, 2h)", s)
	case d < 0:
		return 0, usagef("--max-run: %s is negative; 0 means no limit", s)
	case d%time.Second != 0:
		return 0, usagef("--max-run: %s is not a whole number of seconds", s)
	}
	return int64(d / time.Second), nil
}

// applyQueueFlags sets in q the settings given on the command line.
func applyQueueFlags(cCtx *cli.Context, q *client.Queue) error {
	if cCtx.IsSet("priority") {
		q.Priority = cCtx.Int("priority")
	}
	limits := []struct {
		flag string
		dst  *int64
	}{{"max-size", &q.MaxSize}, {"max-active", &q.MaxActive}, {"max-mem", &q.MaxMemMB}}
	for _, l := range limits {
		if !cCtx.IsSet(l.flag) {
			continue
		}
		n := cCtx.Int64(l.flag)
		if n < 0 {
			return usagef("--%s must not be negative, got %d; 0 means no limit", l.flag, n)
		}
		*l.dst = n
	}
	if cCtx.IsSet("max-run") {
		secs, err := parseMaxRun(cCtx.String("max-run"))
		if err != nil {
			return err
		}
		q.MaxRunSeconds = secs
	}
	return nil
}

// runAdminQueueSet creates (add) or changes (!add) a queue. It reads the
// queues first so that add refuses an existing name, set an unknown one,
// and set keeps the settings not given.
func runAdminQueueSet(cCtx *cli.Context, add bool) error {
	name, err := queueName(cCtx)
	if err != nil {
		return err
	}
	verb, done := "set", "set"
	if add {
		verb, done = "add", "added"
	}
	var q client.Queue
	if err := applyQueueFlags(cCtx, &q); err != nil { // check the flags before any request
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	qs, err := c.Queues(cCtx.Context)
	if err != nil {
		return fmt.Errorf("%s queue %s: list queues: %w", verb, name, err)
	}
	var cur *client.Queue
	for i := range qs {
		if qs[i].Name == name {
			cur = &qs[i]
		}
	}
	switch {
	case add && cur != nil:
		return fmt.Errorf("add queue %s: queue %s %w", name, name, errQueueExists)
	case !add && cur == nil:
		return fmt.Errorf("set queue %s: queue %s %w", name, name, errQueueUnknown)
	}
	q = client.Queue{Name: name}
	if cur != nil {
		q = client.Queue{Name: name, Priority: cur.Priority, MaxSize: cur.MaxSize, MaxActive: cur.MaxActive,
			MaxRunSeconds: cur.MaxRunSeconds, MaxMemMB: cur.MaxMemMB}
		if p := cur.Prime; p != nil { // the queue's own values, not its prime time's
			o := p.Outside
			q.Priority, q.MaxSize, q.MaxActive, q.MaxRunSeconds, q.MaxMemMB = o.Priority, o.MaxSize, o.MaxActive, o.MaxRunSeconds, o.MaxMemMB
		}
	}
	if err := applyQueueFlags(cCtx, &q); err != nil {
		return err
	}
	got, err := c.SetQueue(cCtx.Context, q)
	if err != nil {
		return fmt.Errorf("%s queue %s: %w", verb, name, err)
	}
	if got.Name == "" { // a server that answers with no body
		got = q
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "queue %s %s: %s\n", printable(got.Name), done, describeQueue(got))
	return err
}

func runAdminQueueRemove(cCtx *cli.Context) error {
	name, err := queueName(cCtx)
	if err != nil {
		return err
	}
	if name == client.DefaultQueue {
		return fmt.Errorf("remove queue %s: the default queue always exists", name)
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	if err := c.RemoveQueue(cCtx.Context, name); err != nil {
		return fmt.Errorf("remove queue %s: %w", name, err)
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "queue %s removed\n", name)
	return err
}
