package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show jobs (-j, the default), machines (-m), servers (-s), queues (-q), reservations (-r), licences (--licenses), or why a job waits (--why)",
		UsageText: "netstatus [-j|-m|-s|-q|-r|--licenses] [--json]\n" +
			"netstatus [-j] [--name JOB]... [--user USER] [--state STATE]... [--queue QUEUE] [--json]\n" +
			"netstatus JOB [--json]\n" +
			"netstatus --why JOB [--json]\n" +
			"netmgr status [-j|-m|-s|-q|-r|--why JOB] [--json]",
		Description: "Prints one table:\n\n" +
			"   netstatus -j   jobs: ID, JOB NAME (name.owner), INST (the instance's number),\n" +
			"                  ATTEMPT (its current attempt), BINARY NAME, WHERE, SUBMITTED,\n" +
			"                  STARTED (the attempt; local times, with the date when not\n" +
			"                  today), ELAPSED (how long it ran, or has run), STATE,\n" +
			"                  one row per started instance and one 'N instances queued' row;\n" +
			"                  STATE is queued, placed (sent to its machine, starting),\n" +
			"                  running, suspended, unknown (its machine is cut off), exited(0),\n" +
			"                  failed(3), failed(exec: no such file) (it could not start, and\n" +
			"                  why), signaled(KILL), killed, lost (its machine left the pool),\n" +
			"                  held(dependency), cancelled(dependency), or killed(timeout)\n" +
			"                  and killed(memory) for an instance its time or memory limit\n" +
			"                  ended; an instance that ended after more than one attempt says\n" +
			"                  so: exited(0) after 3 attempts;\n" +
			"                  a finished job is listed until the servers' --job-retention\n" +
			"                  (default 24h) has passed since it ended\n" +
			"   netstatus -m   machines: NAME, ARCH, MTYPE, CPUS, MEMORY, RATING, LOAD,\n" +
			"                  RUNNING, EXECDIRS, STATE, RESERVED; EXECDIRS is the space its\n" +
			"                  exec dir takes (jobs' directories, ended ones kept for the\n" +
			"                  stub's --exec-retention; '-' under 1 MiB); STATE is\n" +
			"                  up, down, draining (up but taking no new work, with the\n" +
			"                  stub's problem if it has one),\n" +
			"                  asleep (its owner policy's reason), suspect (no lease renewal\n" +
			"                  for a second: no new work), restarting (its stub stopped to be\n" +
			"                  started again: its jobs run on, no new work) or unreachable (its\n" +
			"                  lease expired: restartable work runs elsewhere); RESERVED is who\n" +
			"                  holds it and until when: 'tclark until 16:00', 'tclark' until\n" +
			"                  unreserved, '-' when not reserved; then, for machines with\n" +
			"                  GPUs, generic resources or disk, or that cannot enforce\n" +
			"                  something, a RESOURCES table of FREE/TOTAL each: CPUS, GPUS\n" +
			"                  (with their types), GRES, DISK, and NOT ENFORCED\n" +
			"   netstatus -s   servers: NAME, ADDRESS, ROLE (leader, follower, candidate,\n" +
			"                  shutdown, unknown), TERM, LAST INDEX, LAST CONTACT (with the\n" +
			"                  leader: 'leader', 'never' or how long ago), LEADER, VERSION (the\n" +
			"                  server's build, '-' when it does not say), FILES (the space\n" +
			"                  jobs' copy_in and copy_out files take in its blob store, '-'\n" +
			"                  for none), HEALTH (ok, unhealthy (why), unreachable)\n" +
			"   netstatus -q   batch queues, highest priority first: QUEUE, PRIORITY, MAXSIZE,\n" +
			"                  MAXACTIVE, MAXRUN (200m, 90s), MAXMEM (20M), JOBS, WAITING,\n" +
			"                  RUNNING; '-' is no limit. The values are those in force: with a\n" +
			"                  prime-time window (add_q prime={...}), PRIME says whether it is\n" +
			"                  open, until when, and what the change sets\n" +
			"   netstatus -r   reservations: ID, OWNER, MACHINES, FROM, UNTIL ('-' until\n" +
			"                  unreserved); times are local, with the date when not today\n" +
			"   netstatus --licenses   the pool's licences: LICENSE, COUNT, USED, FREE\n\n" +
			"netstatus -j lists only the jobs --name (name, name.owner or id, repeated),\n" +
			"--user, --queue and --state select; with --state, a job whose own state is not\n" +
			"named shows only its instances in the states named:\n\n" +
			"   netstatus --user alice --state failed --state lost\n\n" +
			"netstatus JOB (name or id) shows everything about one job, as Slurm's scontrol\n" +
			"show job does: its owner, state, queue, submit time, binary and arguments,\n" +
			"requirements, restart policy and dependencies, then per instance each\n" +
			"attempt, earlier ones first: its state, machine, pid, restarts, placed,\n" +
			"started and ended times, elapsed time, exit status, CPU time, peak memory,\n" +
			"error and reason; --json prints the job as the API has it. A job the\n" +
			"servers' --job-retention has removed is shown from their history instead\n" +
			"(by id; netmgr history --job ID is the same).\n\n" +
			"netstatus --why JOB says, per queued instance of JOB (name or id), how many\n" +
			"machines each of the matcher's filters turned down:\n\n" +
			"   instance 2 (attempt 1): 8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot\n\n" +
			"--json prints a JSON array of objects instead, one per row (for -j one per\n" +
			"instance, queued ones included, with its queue and the reason it ended), with\n" +
			"keys named like the columns; limits of 0 mean none, times are RFC 3339 and\n" +
			"null when there is none; for --why one per queued instance with keys\n" +
			"instance, attempt, reason, rejections.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "show jobs and their instances (default)"},
			&cli.BoolFlag{Name: "machines", Aliases: []string{"m"}, Usage: "show the machines of the pool"},
			&cli.BoolFlag{Name: "servers", Aliases: []string{"s"}, Usage: "show the server group"},
			&cli.BoolFlag{Name: "queues", Aliases: []string{"q"}, Usage: "show the batch queues"},
			&cli.BoolFlag{Name: "reservations", Aliases: []string{"r"}, Usage: "show the reservations in force or yet to start"},
			&cli.BoolFlag{Name: "licenses", Usage: "show the pool's licences (license NAME = N) and how many running jobs hold"},
			&cli.StringFlag{Name: "why", Usage: "explain why the queued instances of `JOB` (name or id) wait"},
			&cli.StringSliceFlag{Name: "name", Usage: "with -j, list only the job `JOB` (name, name.owner or id); repeat for more"},
			&cli.StringFlag{Name: "user", Usage: "with -j, list only the jobs of `USER`"},
			&cli.StringSliceFlag{Name: "state", Usage: "with -j, list only jobs or instances in `STATE` (running, queued, failed, done, ...); repeat for more"},
			&cli.StringFlag{Name: "queue", Usage: "with -j, list only the jobs of `QUEUE`"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
		}, clientFlags()...),
		Action: runStatus,
	}
}

func runStatus(cCtx *cli.Context) error {
	if cCtx.Args().Len() > 1 {
		return usagef("unexpected argument %q (netstatus shows one job: netstatus JOB)", cCtx.Args().Get(1))
	}
	filter := jobFilter{names: cCtx.StringSlice("name"), user: cCtx.String("user"), states: cCtx.StringSlice("state"), queue: cCtx.String("queue")}
	for _, st := range filter.states {
		if !slices.Contains(filterStates, st) {
			return usagef("--state %q: not a job or instance state (one of %s)", st, strings.Join(filterStates, ", "))
		}
	}
	filtered := len(filter.names) > 0 || filter.user != "" || len(filter.states) > 0 || filter.queue != ""
	view := "jobs"
	n := 0
	for _, v := range []string{"jobs", "machines", "servers", "queues", "reservations", "licenses"} {
		if cCtx.Bool(v) {
			view = v
			n++
		}
	}
	why := cCtx.String("why")
	if cCtx.IsSet("why") {
		if why == "" {
			return usagef("--why needs a job name or id")
		}
		view = "why"
		n++
	}
	detail := cCtx.Args().First()
	if detail != "" {
		view = "detail"
		n++
	}
	if n > 1 {
		return usagef("give only one of -j, -m, -s, -q, -r, --licenses, --why and a JOB")
	}
	if filtered && view != "jobs" {
		return usagef("--name, --user, --state and --queue select jobs: give them with -j")
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
		return renderMachines(w, ms, time.Now())
	case "queues":
		qs, err := c.Queues(cCtx.Context)
		if err != nil {
			return fmt.Errorf("list queues: %w", err)
		}
		if asJSON {
			return renderQueuesJSON(w, qs)
		}
		return renderQueues(w, qs, time.Now())
	case "licenses":
		ls, err := c.Licenses(cCtx.Context)
		if err != nil {
			return fmt.Errorf("list licences: %w", err)
		}
		if asJSON {
			return writeJSON(w, ls)
		}
		return renderLicenses(w, ls)
	case "reservations":
		rs, err := c.Reservations(cCtx.Context)
		if err != nil {
			return fmt.Errorf("list reservations: %w", err)
		}
		if asJSON {
			return renderReservationsJSON(w, rs)
		}
		return renderReservations(w, rs, time.Now())
	case "why":
		return runWhy(cCtx, c, why, asJSON)
	case "detail":
		job, err := c.Job(cCtx.Context, detail)
		if err != nil {
			return jobFromHistory(cCtx, c, detail, asJSON, fmt.Errorf("get job %s: %w", printable(detail), err))
		}
		if asJSON {
			return writeJSON(w, job)
		}
		return renderJobDetail(w, job, time.Now())
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
		if filtered {
			jobs = filterJobs(jobs, filter)
		}
		if asJSON {
			return renderJobsJSON(w, jobs)
		}
		return renderJobs(w, jobs, time.Now())
	}
}

// jobFromHistory answers netstatus JOB for a job the database no longer
// holds (the servers' --job-retention removed it): when ref is a job id
// with ended attempts in the history, it prints them as netmgr history
// would, after a line saying where they come from; otherwise, and with
// --json, it returns notFound, with a pointer to netmgr history.
func jobFromHistory(cCtx *cli.Context, c *client.Client, ref string, asJSON bool, notFound error) error {
	id, perr := strconv.ParseUint(ref, 10, 64)
	if !errors.Is(notFound, client.ErrNotFound) || perr != nil || id == 0 {
		return notFound
	}
	if asJSON {
		return fmt.Errorf("%w (netmgr history --job %d --json shows how it ended, if it is in the history)", notFound, id)
	}
	as, err := c.History(cCtx.Context, client.HistoryQuery{Job: id})
	if err != nil || len(as) == 0 {
		return notFound
	}
	fmt.Fprintf(cCtx.App.Writer, "job %d is no longer in the database (job retention); its attempts, from the servers' history:\n", id)
	return renderHistory(cCtx.App.Writer, as, time.Local)
}

// filterStates are the states --state takes: a job's or an instance's.
var filterStates = []string{
	client.JobQueued, client.JobRunning, client.JobDone, client.JobFailed, client.JobKilled, client.JobScheduled,
	client.InstancePlaced, client.InstanceExited, client.InstanceSignaled, client.InstanceLost, client.InstanceUnknown,
	client.InstanceSuspended, client.InstanceHeld, client.InstanceCancelled,
}

// runWhy prints why the queued instances of job ref wait.
func runWhy(cCtx *cli.Context, c *client.Client, ref string, asJSON bool) error {
	ws, err := c.Why(cCtx.Context, ref)
	if err != nil {
		return fmt.Errorf("explain job %s: %w", printable(ref), err)
	}
	w := cCtx.App.Writer
	if asJSON {
		return renderWhyJSON(w, ws)
	}
	var job client.Job
	if len(ws) == 0 {
		if job, err = c.Job(cCtx.Context, ref); err != nil {
			return fmt.Errorf("get job %s: %w", printable(ref), err)
		}
	}
	return renderWhy(w, job, ws)
}
