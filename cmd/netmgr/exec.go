package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
	"github.com/netmgr/netmgr/stub"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:  "exec",
		Usage: "submit a job: run a binary on machines of the pool",
		UsageText: "netexec [options] BINARY [ARG...]\n" +
			"netexec [options] 'SPEC'\n" +
			"netmgr exec [options] BINARY [ARG...]",
		Description: "Submits a job and prints its name and id. The job is either a binary and its\n" +
			"arguments, run on any machine, or one job specification string in the paper's\n" +
			"language:\n\n" +
			"   netexec -n 3 --name hello /bin/sh -c 'echo hi from $(hostname)'\n" +
			"   netexec 'binaries={x86_64=/bin/sh},min=3,symb_name=hello,env={\"A=b\"},args={-c,\"echo hi\"}'\n\n" +
			"The paper's Example 1, 3 copies on sparc machines with more than 10 MB of memory,\n" +
			"mailing the owner when done:\n\n" +
			"   netexec 'binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail'\n\n" +
			"and Example 2, 4 copies of a sparc or mips binary with argument 4 on machines\n" +
			"that mount /usr/u/fred/data, named test1:\n\n" +
			"   netexec 'binaries={sparc=/usr/u/fred/sparc/test,mips=/usr/u/fred/mips/test},min=4,args={4},mounts={/usr/u/fred/data},symb_name=test1'\n\n" +
			"The spec options: binaries={KEY=PATH,...} (required; each instance runs the\n" +
			"binary for a key its machine has, \"*\" for any), min=N, symb_name=NAME,\n" +
			"args={...}, env={NAME=value,...}; what a machine must have: keys={K,...},\n" +
			"comparisons ATTR OP NUMBER on its numeric attributes (mem>10, rating>=8,\n" +
			"nprocs<4, mem==32; OP is one of > >= < <= == !=), mounts={/PATH,...},\n" +
			"machines={NAME,...}; placement: unique (one instance per machine),\n" +
			"max_per_machine=N, load=F (load one instance imposes), memory=MB, queue=NAME;\n" +
			"limits: time=LIMIT (minutes, or 90s, 30m, 2h) and signal=SIG@LEAD;\n" +
			"restart=no|on-failure|always with max_restarts=N; dependencies: after=JOB or\n" +
			"after={JOB,...} (start once each has ended), afterok= (once each succeeded),\n" +
			"afternotok= (once each ended without succeeding), JOB a name or id; a schedule:\n" +
			"cron=\"MIN HOUR DAY MONTH WEEKDAY\" with catchup=none|last and overlap=skip|allow;\n" +
			"mail: mail (the owner) or mail=ADDRESS, with mail_type=TYPE or {TYPE,...}\n" +
			"naming when (begin, end, fail, requeue or all; default end and fail); files:\n" +
			"copy_in={FILE,...} and copy_out={PATH,...}. Each has a flag below.\n\n" +
			"Files: --copy-in sends files and directories of this machine with the job\n" +
			"(relative to the current directory); each lands in the execution directory\n" +
			"under its base name, before the job starts, checked by its sha256, and a\n" +
			"BINARY or argument naming one is rewritten to it (./sim, ./in.txt). The\n" +
			"servers keep them, a majority of them before the job is accepted, up to their\n" +
			"--max-copy-size per job (default 64 MiB). --copy-binary sends BINARY too, so\n" +
			"machines without it run it. --copy-out names paths (globs allowed) of the\n" +
			"execution directory the servers keep when an attempt ends, up to the same\n" +
			"limit; netmgr fetch JOB writes them out, and --wait done does it itself:\n\n" +
			"   netexec --copy-binary --copy-in in.txt --copy-out 'out*' --wait done ./sim ./in.txt\n\n" +
			"Mail says the job, each instance, where it ran, its exit status or signal, run\n" +
			"time and resource use, and why it ended (cancelled(dependency) names the\n" +
			"dependency). The servers send it through their relay (netmgr server --smtp):\n\n" +
			"   netexec --mail-to ops@example.org --mail-type begin,end /bin/backup\n" +
			"   netexec 'binaries={*=/bin/backup},mail=ops@example.org,mail_type={begin,end}'\n\n" +
			"A chain: netexec --name a /bin/prep; netexec --name b --afterok a /bin/run;\n" +
			"netexec --after b /bin/cleanup. A job waits held(dependency) until its\n" +
			"dependencies decide, and ends cancelled(dependency) when it never can run.\n\n" +
			"A cron job runs nothing itself: each firing of its schedule starts a run, a job\n" +
			"of its own named NAME.OWNER#N, whose environment has NETMGR_SCHEDULED_TIME (the\n" +
			"time it was scheduled for, RFC 3339). The schedule is five fields, or six with\n" +
			"seconds first, or @hourly, @daily, @weekly, @monthly, @yearly or @every DURATION,\n" +
			"optionally after CRON_TZ=ZONE (times are UTC otherwise):\n\n" +
			"   netexec --name backup --cron '0 3 * * *' /usr/local/bin/backup\n" +
			"   netexec 'binaries={*=/bin/report},symb_name=report,cron=\"CRON_TZ=Europe/Paris 30 8 * * 1-5\",catchup=none'\n" +
			"   netexec --cron '@every 10m' --overlap allow /bin/poll\n\n" +
			"Each firing is decided once, whatever leader changes happen. A firing whose time\n" +
			"passed while no server led the group runs late with catchup=last (the default:\n" +
			"once, for the most recent time missed) or not at all with catchup=none; a firing\n" +
			"while the previous run still runs is skipped with overlap=skip (the default), or\n" +
			"runs alongside with overlap=allow. netstatus -j shows the schedule and the next\n" +
			"firing; netkill ends the schedule, netkill --runs its running runs too.\n\n" +
			"Limits: --memory is both what an instance needs and the most it may use; past\n" +
			"it the instance is killed, reason memory. --time is its run time limit, within\n" +
			"its queue's nq_maxrun: past it the job's process group gets TERM, then KILL after\n" +
			"the queue's kill grace (default 10s), reason timeout. --signal SIG@LEAD (Slurm's\n" +
			"form; SIG a name or number, LEAD seconds, default 60) sends SIG LEAD before the\n" +
			"limit, so the job can checkpoint:\n\n" +
			"   netexec --time 2h --signal USR1@300 ./simulate   # trap 'checkpoint' USR1\n\n" +
			"netstatus -j shows such an instance killed(timeout) or killed(memory).\n\n" +
			"Options go before BINARY; everything after it is passed to the job ('--' also\n" +
			"ends the options). A flag may not set what the spec string sets too. List flags\n" +
			"take comma-separated values and may be repeated.\n\n" +
			"A relative BINARY (./myjob.sh, bin/run) is resolved at submit against the\n" +
			"current directory and must exist there; so are arguments that start with ./ or\n" +
			"../ and a relative --chdir. The job's machines must then see the same paths: a\n" +
			"shared file system, unless the file is sent with the job (--copy-binary,\n" +
			"--copy-in). A BINARY without a slash is looked up in the PATH of the\n" +
			"machine that runs it.\n\n" +
			"The job's environment: HOME, USER, LOGNAME and SHELL of the account it runs\n" +
			"as, the machine's PATH, the NETMGR_JOB_ID, NETMGR_JOB_NAME, NETMGR_INSTANCE,\n" +
			"NETMGR_ATTEMPT and NETMGR_MACHINE of the attempt, what --export passes of\n" +
			"yours and what --env sets (which wins). --export defaults to the locale and\n" +
			"time zone (LANG, LANGUAGE, LC_*, TZ), which mean the same everywhere: the rest\n" +
			"of your environment describes this machine and this session, not the unlike\n" +
			"machines of the pool, and is stored with the job. Slurm's default is ALL, for\n" +
			"the twin nodes of one cluster; give --export ALL for that. The job starts in\n" +
			"its execution directory, which holds its stdout and stderr, or in --chdir DIR.\n" +
			"That directory is on the machine that runs the attempt, at\n\n" +
			"   EXEC_DIR/CLUSTER/JOB.INSTANCE.ATTEMPT/stdout (and stderr)\n\n" +
			"EXEC_DIR the stub's --exec-dir (default " + stub.DefaultExecDir + "), CLUSTER the id of the\n" +
			"cluster's CA (netmgr stub --help), INSTANCE counting from 0 and ATTEMPT from 1:\n" +
			"job 12's only instance writes " + stub.DefaultExecDir + "/CLUSTER/12.0.1/stdout. The stub keeps it\n" +
			"for its --exec-retention (default 24h) after the attempt ends, then removes it.\n\n" +
			"A job no machine of the pool can run (none meets its requirements) is\n" +
			"queued all the same, for a machine that may join, and netexec says why, as\n" +
			"netstatus --why would (\"no machine can run this now: 3 machines lack key\n" +
			"sparc\"); --no-queue refuses it instead.\n\n" +
			"--wait started prints how each instance started, as it starts (where it\n" +
			"runs and its pid, even if it has ended since), and after a second one line\n" +
			"on stderr each time what the others wait for changes; --wait done prints how\n" +
			"each ended and exits 1 if any did not exit 0.\n\n" + interactiveHelp + "\n\n" + batchHelp + "\n\n" + retryNote,
		Flags: append(append(jobFlags(),
			&cli.StringFlag{Name: "wait", Usage: "wait until the instances have started or are done (`WHEN`: started|done) and report them"},
			&cli.StringFlag{Name: "batch", Usage: "submit the jobs of `FILE`, one netexec command line per line ('-' reads standard input), in one request"},
		), append(interactiveFlags(), clientFlags()...)...),
		Action: runExec,
	}
}

// jobFlags are the options of netexec that describe one job: those a
// line of a --batch file may have.
func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "instances", Aliases: []string{"n"}, DefaultText: "1", Usage: "run `N` instances (the spec's min=N)"},
		&cli.StringFlag{Name: "name", Usage: "symbolic job `NAME` (the spec's symb_name=), not of the form job<NUMBER>: the server names a job without one job<ID>"},
		&cli.StringSliceFlag{Name: "env", Usage: "add `NAME=value` to the job's environment (repeatable)"},
		&cli.StringSliceFlag{Name: "keys", Usage: "run only on machines with all these `KEY`s, e.g. mathlab,fpu (keys=)"},
		&cli.StringSliceFlag{Name: "require", Usage: "run only on machines whose attributes meet `ATTR>N`, e.g. 'mem>10' or 'rating>=8' (repeatable; the spec's comparisons)"},
		&cli.StringSliceFlag{Name: "mounts", Usage: "run only on machines that mount these `PATH`s (mounts=)"},
		&cli.StringSliceFlag{Name: "machines", Usage: "run only on these `MACHINE`s, e.g. flute,viola (machines=)"},
		&cli.BoolFlag{Name: "unique", Usage: "run at most one instance per machine (unique)"},
		&cli.BoolFlag{Name: "gang", Usage: "start all instances at once or none, stop and restart them together, and tell each the others' machines (gang)"},
		&cli.IntFlag{Name: "max-per-machine", DefaultText: "no limit", Usage: "run at most `N` instances on one machine (max_per_machine=)"},
		&cli.Float64Flag{Name: "load", DefaultText: "1.0, one busy CPU", Usage: "the load `F` one instance imposes on its machine (load=)"},
		&cli.Int64Flag{Name: "memory", DefaultText: "not checked", Usage: "memory one instance needs, in `MB`, and may use: more kills it, reason memory (memory=)"},
		&cli.IntFlag{Name: "cpus", DefaultText: "1, one slot, not limited", Usage: "CPUs one instance takes of its machine's, and may use: its cgroup's cpu.max where the kernel allows (cpus=)"},
		&cli.BoolFlag{Name: "exclusive-cpus", Usage: "give each instance its --cpus CPUs for itself, a cpuset, rather than a share of the machine's time (exclusive_cpus)"},
		&cli.StringFlag{Name: "gpus", Usage: "`N` GPUs per instance, or TYPE:N of one type (a100:2); the instance sees exactly them in CUDA_VISIBLE_DEVICES and NETMGR_GPUS (gpus=)"},
		&cli.StringSliceFlag{Name: "gres", Usage: "`NAME:N` of a machine's generic resource per instance, e.g. fpga:1 (repeatable; gres=)"},
		&cli.StringFlag{Name: "disk", Usage: "local disk `SIZE` one instance claims under its execution directory: MB, or 500M, 20G; more kills it, reason disk (disk=)"},
		&cli.StringSliceFlag{Name: "license", Usage: "hold `NAME:N` of the pool's licences (NAME alone: 1) from start to end, whatever machine runs it (repeatable; license=)"},
		&cli.StringFlag{Name: "time", DefaultText: "the queue's nq_maxrun", Usage: "time `LIMIT` of each instance: minutes (90) or 90s, 30m, 2h, within the queue's; then TERM, KILL after the queue's kill grace, reason timeout (time=)"},
		&cli.StringFlag{Name: "signal", Usage: "send `SIG@LEAD` LEAD seconds (default 60) before the time limit, e.g. USR1@120, so the job can checkpoint (signal=)"},
		&cli.StringFlag{Name: "queue", Usage: "wait in batch queue `NAME` (queue=)"},
		&cli.StringFlag{Name: "restart", Usage: "restart `POLICY`: no, on-failure or always (restart=)"},
		&cli.IntFlag{Name: "max-restarts", DefaultText: "the server's", Usage: "restart an instance at most `N` times; needs --restart (max_restarts=)"},
		&cli.BoolFlag{Name: "mail", Usage: "mail the job's owner when it ends or fails (mail)"},
		&cli.StringFlag{Name: "mail-to", Usage: "mail `ADDRESS` when the job ends or fails (mail=ADDRESS)"},
		&cli.StringSliceFlag{Name: "mail-type", DefaultText: "end,fail", Usage: "mail when the job does these: `TYPE`s begin, end, fail, requeue or all; needs --mail or --mail-to (mail_type=)"},
		&cli.StringFlag{Name: "cron", Usage: "run on the cron schedule `EXPR`, e.g. '0 3 * * *', '@hourly', 'CRON_TZ=Europe/Paris 0 3 * * *' (cron=)"},
		&cli.StringFlag{Name: "catchup", DefaultText: "last", Usage: "a cron firing missed while no server led: run the most recent once (last) or `none` of them (catchup=)"},
		&cli.StringFlag{Name: "overlap", DefaultText: "skip", Usage: "a cron firing while the previous run runs: `skip` it or allow it (overlap=)"},
		&cli.StringSliceFlag{Name: "after", Usage: "start once each `JOB` (name or id) has ended, however it ended, e.g. build,12 (after=)"},
		&cli.StringSliceFlag{Name: "afterok", Usage: "start once each `JOB` has succeeded; cancelled if one does not (afterok=)"},
		&cli.StringSliceFlag{Name: "afternotok", Usage: "start once each `JOB` has ended without succeeding; cancelled if one succeeds (afternotok=)"},
		&cli.StringSliceFlag{Name: "copy-in", Usage: "send these `FILE`s and directories of this machine with the job, into its execution directory under their base names (copy_in=)"},
		&cli.StringSliceFlag{Name: "copy-out", Usage: "keep these `PATH`s (globs allowed) of the execution directory when an attempt ends, for netmgr fetch (copy_out=)"},
		&cli.StringSliceFlag{Name: "checkpoint", Usage: "when an attempt exits with --checkpoint-exit, keep these `PATH`s of the execution directory on the servers and start again at once from them; every later attempt starts from the newest (checkpoint=)"},
		&cli.IntFlag{Name: "checkpoint-exit", DefaultText: "none", Usage: "the exit `CODE` (1 to 255) by which the job says its --checkpoint files are written (checkpoint_exit=)"},
		&cli.BoolFlag{Name: "copy-binary", Usage: "send BINARY (or the spec's binaries) with the job, so machines without it run it"},
		&cli.StringFlag{Name: "export", DefaultText: "LANG,LANGUAGE,LC_*,TZ", Usage: "pass these of your environment variables to the job: `VARS` is a list of NAMEs and NAME=value, ALL (all but NETMGR_*), or NONE"},
		&cli.StringFlag{Name: "chdir", DefaultText: "the execution directory", Usage: "start the job in `DIR` on its machine (relative: against the current directory)"},
		&cli.BoolFlag{Name: "no-queue", Usage: "refuse the job, rather than queue it, when no machine of the pool can run it"},
	}
}

// execArgs is netexec's command line after flag parsing. The Set fields
// tell whether a flag was given at all, for flags whose zero value is a
// value someone might give.
type execArgs struct {
	Positional []string
	// Instances is -n; InstancesSet tells whether it was given at all.
	Instances    int
	InstancesSet bool
	Name         string
	Env          []string

	Keys     []string
	Require  []string
	Mounts   []string
	Machines []string
	Unique   bool
	Gang     bool

	MaxPerMachine    int
	MaxPerMachineSet bool
	Load             float64
	LoadSet          bool
	MemoryMB         int64
	MemorySet        bool
	CPUs             int
	CPUsSet          bool
	ExclusiveCPUs    bool
	GPUs             string
	Gres             []string
	Disk             string
	Licenses         []string
	Time             string
	Signal           string
	Queue            string
	Restart          string
	MaxRestarts      int
	MaxRestartsSet   bool

	Mail       bool
	MailTo     string
	MailType   []string
	Cron       string
	Catchup    string
	Overlap    string
	After      []string
	AfterOK    []string
	AfterNotOK []string
	CopyIn     []string
	CopyOut    []string
	// Checkpoint and CheckpointExit are --checkpoint and --checkpoint-exit
	// (0: not given).
	Checkpoint     []string
	CheckpointExit int
}

// specStringRE matches the start of a spec string: an option name and '='.
// Compiled at its first use: a command's start-up compiles nothing.
var specStringRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)
})

// isSpecString reports whether arg is a job spec string rather than a
// binary: it starts with word=.
func isSpecString(arg string) bool { return specStringRE().MatchString(arg) }

// buildSpec turns netexec's arguments into a job spec. Every error is a
// usage error.
func buildSpec(a execArgs) (client.JobSpec, error) {
	if len(a.Positional) == 0 {
		return client.JobSpec{}, usagef("missing BINARY or job spec string")
	}
	var js client.JobSpec
	fromSpec := isSpecString(a.Positional[0])
	if fromSpec {
		if len(a.Positional) > 1 {
			if strings.HasPrefix(a.Positional[1], "-") {
				return js, usagef("options go before the job spec string, got %q after it", a.Positional[1])
			}
			return js, usagef("a job spec string takes no further arguments, got %q after it", a.Positional[1:])
		}
		var err error
		if js, err = spec.Parse(a.Positional[0]); err != nil {
			return js, &usageError{err: err}
		}
	} else {
		js.Binaries = map[string]string{client.AnyKey: a.Positional[0]}
		if len(a.Positional) > 1 {
			js.Args = append([]string(nil), a.Positional[1:]...)
		}
	}
	for _, f := range execFlags(a, js) {
		if !f.given {
			continue
		}
		if fromSpec && f.inSpec {
			return js, usagef("%s and %s in the spec string both set %s; use one", f.flag, f.opt, f.what)
		}
		if err := f.apply(&js); err != nil {
			return js, err
		}
	}
	if err := spec.Validate(js); err != nil {
		return js, &usageError{err: err}
	}
	return js, nil
}

// execFlag is one netexec flag: whether it was given, whether the spec
// string set the same field, and how it sets the field.
type execFlag struct {
	flag, opt, what string
	given, inSpec   bool
	apply           func(*client.JobSpec) error
}

// execFlags lists netexec's job flags for a, with inSpec taken from js as
// the spec string (or the BINARY form) left it.
func execFlags(a execArgs, js client.JobSpec) []execFlag {
	setList := func(vals []string, set func(*client.JobSpec, []string)) func(*client.JobSpec) error {
		return func(js *client.JobSpec) error {
			set(js, splitList(vals))
			return nil
		}
	}
	return []execFlag{
		{"-n/--instances", "min=", "the number of instances", a.InstancesSet, js.Min != 0, func(js *client.JobSpec) error {
			if a.Instances < 1 {
				return usagef("-n/--instances must be at least 1, got %d", a.Instances)
			}
			js.Min = a.Instances
			return nil
		}},
		{"--name", "symb_name=", "the job name", a.Name != "", js.Name != "", func(js *client.JobSpec) error {
			if err := spec.CheckName(a.Name); err != nil {
				return usagef("--name: %w", err)
			}
			js.Name = a.Name
			return nil
		}},
		{"--env", "env=", "the environment", len(a.Env) > 0, len(js.Env) > 0, func(js *client.JobSpec) error {
			for _, e := range a.Env {
				if err := spec.CheckEnv(e); err != nil {
					return usagef("--env: %w", err)
				}
			}
			js.Env = append([]string(nil), a.Env...)
			return nil
		}},
		{"--keys", "keys=", "the required keys", len(a.Keys) > 0, len(js.Keys) > 0, setList(a.Keys, func(js *client.JobSpec, v []string) { js.Keys = v })},
		{"--require", "comparisons such as mem>10", "the attribute requirements", len(a.Require) > 0, len(js.Requirements) > 0,
			func(js *client.JobSpec) error {
				for _, r := range splitList(a.Require) {
					req, err := spec.ParseRequirement(r)
					if err != nil {
						return usagef("--require: %w", err)
					}
					js.Requirements = append(js.Requirements, req)
				}
				return nil
			}},
		{"--mounts", "mounts=", "the required mounts", len(a.Mounts) > 0, len(js.Mounts) > 0, setList(a.Mounts, func(js *client.JobSpec, v []string) { js.Mounts = v })},
		{"--machines", "machines=", "the machines to run on", len(a.Machines) > 0, len(js.Machines) > 0, setList(a.Machines, func(js *client.JobSpec, v []string) { js.Machines = v })},
		{"--unique", "unique", "one instance per machine", a.Unique, js.Unique, func(js *client.JobSpec) error {
			js.Unique = true
			return nil
		}},
		{"--gang", "gang", "gang placement", a.Gang, js.Gang, func(js *client.JobSpec) error {
			js.Gang = true
			return nil
		}},
		{"--max-per-machine", "max_per_machine=", "the instances per machine", a.MaxPerMachineSet, js.MaxPerMachine != 0, func(js *client.JobSpec) error {
			if a.MaxPerMachine < 1 {
				return usagef("--max-per-machine must be at least 1, got %d", a.MaxPerMachine)
			}
			js.MaxPerMachine = a.MaxPerMachine
			return nil
		}},
		{"--load", "load=", "the imposed load", a.LoadSet, js.Load != 0, func(js *client.JobSpec) error {
			if !(a.Load > 0) || math.IsInf(a.Load, 0) {
				return usagef("--load must be a positive number, got %v", a.Load)
			}
			js.Load = a.Load
			return nil
		}},
		{"--memory", "memory=", "the memory per instance", a.MemorySet, js.MemoryMB != 0, func(js *client.JobSpec) error {
			if a.MemoryMB < 1 {
				return usagef("--memory must be at least 1 (MB), got %d", a.MemoryMB)
			}
			js.MemoryMB = a.MemoryMB
			return nil
		}},
		{"--cpus", "cpus=", "the CPUs per instance", a.CPUsSet, js.CPUs != 0, func(js *client.JobSpec) error {
			if a.CPUs < 1 {
				return usagef("--cpus must be at least 1, got %d", a.CPUs)
			}
			js.CPUs = a.CPUs
			return nil
		}},
		{"--exclusive-cpus", "exclusive_cpus", "exclusive CPUs", a.ExclusiveCPUs, js.ExclusiveCPUs, func(js *client.JobSpec) error {
			js.ExclusiveCPUs = true
			return nil
		}},
		{"--gpus", "gpus=", "the GPUs per instance", a.GPUs != "", js.GPUs != 0, func(js *client.JobSpec) error {
			typ, n, err := spec.ParseGPUs(a.GPUs)
			if err != nil {
				return usagef("--gpus: %w", err)
			}
			js.GPUType, js.GPUs = typ, n
			return nil
		}},
		{"--gres", "gres=", "the generic resources", len(a.Gres) > 0, len(js.Gres) > 0, func(js *client.JobSpec) error {
			m, err := countFlags(a.Gres, false)
			if err != nil {
				return usagef("--gres: %w", err)
			}
			js.Gres = m
			return nil
		}},
		{"--disk", "disk=", "the disk per instance", a.Disk != "", js.DiskMB != 0, func(js *client.JobSpec) error {
			mb, err := spec.ParseDisk(a.Disk)
			if err != nil {
				return usagef("--disk: %w", err)
			}
			js.DiskMB = mb
			return nil
		}},
		{"--license", "license=", "the licences", len(a.Licenses) > 0, len(js.Licenses) > 0, func(js *client.JobSpec) error {
			m, err := countFlags(a.Licenses, true)
			if err != nil {
				return usagef("--license: %w", err)
			}
			js.Licenses = m
			return nil
		}},
		{"--time", "time=", "the time limit", a.Time != "", js.TimeLimitS != 0, func(js *client.JobSpec) error {
			secs, err := spec.ParseTimeLimit(a.Time)
			if err != nil {
				return usagef("--time: %w", err)
			}
			js.TimeLimitS = secs
			return nil
		}},
		{"--signal", "signal=", "the warning signal", a.Signal != "", js.WarnSignal != "", func(js *client.JobSpec) error {
			name, lead, err := spec.ParseSignal(a.Signal)
			if err != nil {
				return usagef("--signal: %w", err)
			}
			js.WarnSignal, js.WarnLeadS = name, lead
			return nil
		}},
		{"--queue", "queue=", "the queue", a.Queue != "", js.Queue != "", func(js *client.JobSpec) error {
			js.Queue = a.Queue
			return nil
		}},
		{"--restart", "restart=", "the restart policy", a.Restart != "", js.Restart != "", func(js *client.JobSpec) error {
			js.Restart = a.Restart
			return nil
		}},
		{"--max-restarts", "max_restarts=", "the restart limit", a.MaxRestartsSet, js.MaxRestarts != 0, func(js *client.JobSpec) error {
			if a.MaxRestarts < 1 {
				return usagef("--max-restarts must be at least 1, got %d", a.MaxRestarts)
			}
			js.MaxRestarts = a.MaxRestarts
			return nil
		}},
		{"--mail/--mail-to", "mail", "who is mailed", a.Mail || a.MailTo != "", js.Mail != "", func(js *client.JobSpec) error {
			js.Mail = spec.MailOwner
			if a.MailTo != "" {
				js.Mail = a.MailTo
			}
			return nil
		}},
		{"--mail-type", "mail_type=", "when mail is sent", len(a.MailType) > 0, len(js.MailType) > 0, setList(a.MailType, func(js *client.JobSpec, v []string) { js.MailType = v })},
		{"--cron", "cron=", "the schedule", a.Cron != "", js.Cron != "", func(js *client.JobSpec) error {
			js.Cron = a.Cron
			return nil
		}},
		{"--catchup", "catchup=", "the catch-up policy", a.Catchup != "", js.Catchup != "", func(js *client.JobSpec) error {
			js.Catchup = a.Catchup
			return nil
		}},
		{"--overlap", "overlap=", "the overlap policy", a.Overlap != "", js.Overlap != "", func(js *client.JobSpec) error {
			js.Overlap = a.Overlap
			return nil
		}},
		{"--after", "after=", "the jobs to wait for", len(a.After) > 0, len(js.After) > 0, setList(a.After, func(js *client.JobSpec, v []string) { js.After = v })},
		{"--afterok", "afterok=", "the jobs that must succeed first", len(a.AfterOK) > 0, len(js.AfterOK) > 0, setList(a.AfterOK, func(js *client.JobSpec, v []string) { js.AfterOK = v })},
		{"--afternotok", "afternotok=", "the jobs that must fail first", len(a.AfterNotOK) > 0, len(js.AfterNotOK) > 0, setList(a.AfterNotOK, func(js *client.JobSpec, v []string) { js.AfterNotOK = v })},
		{"--copy-in", "copy_in=", "the files copied in", len(a.CopyIn) > 0, len(js.CopyIn) > 0, setList(a.CopyIn, func(js *client.JobSpec, v []string) { js.CopyIn = v })},
		{"--copy-out", "copy_out=", "the files copied out", len(a.CopyOut) > 0, len(js.CopyOut) > 0, setList(a.CopyOut, func(js *client.JobSpec, v []string) { js.CopyOut = v })},
		{"--checkpoint", "checkpoint=", "the checkpoint files", len(a.Checkpoint) > 0, len(js.Checkpoint) > 0, setList(a.Checkpoint, func(js *client.JobSpec, v []string) { js.Checkpoint = v })},
		{"--checkpoint-exit", "checkpoint_exit=", "the checkpoint exit code", a.CheckpointExit != 0, js.CheckpointExit != 0, func(js *client.JobSpec) error {
			if a.CheckpointExit < 1 || a.CheckpointExit > 255 {
				return usagef("--checkpoint-exit: %d is not an exit code from 1 to 255", a.CheckpointExit)
			}
			js.CheckpointExit = a.CheckpointExit
			return nil
		}},
	}
}

func runExec(cCtx *cli.Context) error {
	if cCtx.IsSet("batch") {
		return runBatch(cCtx)
	}
	if cCtx.Bool("interactive") || cCtx.Bool("pty") {
		return runInteractive(cCtx)
	}
	wait := cCtx.String("wait")
	if wait != "" && wait != client.WaitStarted && wait != client.WaitDone {
		return usagef("--wait must be %q or %q, got %q", client.WaitStarted, client.WaitDone, wait)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("resolve relative paths: %w", err)
	}
	req, err := jobRequest(cCtx, cwd)
	if err != nil {
		return err
	}
	archive, err := stageCopyIn(&req.Spec, cwd)
	if err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	if err := sendCopyIn(cCtx.Context, c, archive); err != nil {
		return err
	}
	resp, err := c.Submit(cCtx.Context, req)
	if err != nil {
		return fmt.Errorf("submit job: %w", err)
	}
	w := cCtx.App.Writer
	writeSubmitted(w, cCtx.App.ErrWriter, resp)
	ref := strconv.FormatUint(resp.ID, 10)
	switch wait {
	case "":
		return nil
	case client.WaitStarted:
		if _, err := waitStarted(cCtx.Context, c, ref, w, cCtx.App.ErrWriter); err != nil {
			return fmt.Errorf("wait for job %d: %w", resp.ID, err)
		}
		return nil
	}
	job, err := c.WaitJob(cCtx.Context, ref, wait)
	if err != nil {
		return fmt.Errorf("wait for job %d: %w", resp.ID, err)
	}
	bad := writeOutcomes(w, job)
	if wait == client.WaitDone && len(job.Spec.CopyOut) > 0 {
		if err := fetchOutputs(cCtx.Context, c, job, -1, ".", w); err != nil {
			return fmt.Errorf("job %d: %w", resp.ID, err)
		}
	}
	if wait == client.WaitDone && bad > 0 {
		return fmt.Errorf("%d of %d instances of job %d did not exit 0", bad, len(job.Instances), resp.ID)
	}
	return nil
}

// jobRequest builds the submit request of the job cCtx's arguments and
// job flags describe (jobFlags), resolving relative paths against cwd.
func jobRequest(cCtx *cli.Context, cwd string) (client.SubmitRequest, error) {
	js, err := buildSpec(execArgs{
		Positional:       cCtx.Args().Slice(),
		Instances:        cCtx.Int("instances"),
		InstancesSet:     cCtx.IsSet("instances"),
		Name:             cCtx.String("name"),
		Env:              cCtx.StringSlice("env"),
		Keys:             cCtx.StringSlice("keys"),
		Require:          cCtx.StringSlice("require"),
		Mounts:           cCtx.StringSlice("mounts"),
		Machines:         cCtx.StringSlice("machines"),
		Unique:           cCtx.Bool("unique"),
		Gang:             cCtx.Bool("gang"),
		MaxPerMachine:    cCtx.Int("max-per-machine"),
		MaxPerMachineSet: cCtx.IsSet("max-per-machine"),
		Load:             cCtx.Float64("load"),
		LoadSet:          cCtx.IsSet("load"),
		MemoryMB:         cCtx.Int64("memory"),
		MemorySet:        cCtx.IsSet("memory"),
		CPUs:             cCtx.Int("cpus"),
		CPUsSet:          cCtx.IsSet("cpus"),
		ExclusiveCPUs:    cCtx.Bool("exclusive-cpus"),
		GPUs:             cCtx.String("gpus"),
		Gres:             cCtx.StringSlice("gres"),
		Disk:             cCtx.String("disk"),
		Licenses:         cCtx.StringSlice("license"),
		Time:             cCtx.String("time"),
		Signal:           cCtx.String("signal"),
		Queue:            cCtx.String("queue"),
		Restart:          cCtx.String("restart"),
		MaxRestarts:      cCtx.Int("max-restarts"),
		MaxRestartsSet:   cCtx.IsSet("max-restarts"),
		Mail:             cCtx.Bool("mail"),
		MailTo:           cCtx.String("mail-to"),
		MailType:         cCtx.StringSlice("mail-type"),
		Cron:             cCtx.String("cron"),
		Catchup:          cCtx.String("catchup"),
		Overlap:          cCtx.String("overlap"),
		After:            cCtx.StringSlice("after"),
		AfterOK:          cCtx.StringSlice("afterok"),
		AfterNotOK:       cCtx.StringSlice("afternotok"),
		CopyIn:           cCtx.StringSlice("copy-in"),
		CopyOut:          cCtx.StringSlice("copy-out"),
		Checkpoint:       cCtx.StringSlice("checkpoint"),
		CheckpointExit:   cCtx.Int("checkpoint-exit"),
	})
	if err != nil {
		return client.SubmitRequest{}, err
	}
	if err := exportEnv(&js, cCtx.String("export"), os.Environ()); err != nil {
		return client.SubmitRequest{}, err
	}
	if cCtx.Bool("copy-binary") {
		if err := addCopyBinaries(&js); err != nil {
			return client.SubmitRequest{}, err
		}
	}
	if err := resolvePaths(&js, cCtx.String("chdir"), cwd, pathExists); err != nil {
		return client.SubmitRequest{}, err
	}
	return client.SubmitRequest{Spec: js, NoQueue: cCtx.Bool("no-queue")}, nil
}

// writeSubmitted prints the line that says a job was submitted on w, and
// on errw why no machine can run it now, if none can.
func writeSubmitted(w, errw io.Writer, resp client.SubmitResponse) {
	fmt.Fprintf(w, "job %s.%s id %d submitted\n", printable(resp.Name), printable(resp.Owner), resp.ID)
	if resp.Unrunnable != "" {
		fmt.Fprintf(errw, "netexec: no machine can run this now: %s; job %d waits for a machine that can (netkill %d drops it)\n",
			printable(resp.Unrunnable), resp.ID, resp.ID)
	}
}

// writeOutcomes prints one line per instance of job, in instance order, and
// returns how many instances did not exit 0 (running ones count as fine).
func writeOutcomes(w io.Writer, job client.Job) int {
	ins := append([]client.Instance(nil), job.Instances...)
	sort.Slice(ins, func(i, j int) bool { return ins[i].Index < ins[j].Index })
	bad := 0
	for _, in := range ins {
		desc := describeInstance(in)
		if in.Reason != "" && in.Finished() {
			desc += " (" + in.Reason + ")"
		}
		fmt.Fprintf(w, "instance %d: %s\n", in.Index, printable(desc))
		if in.Finished() && (in.State != client.InstanceExited || in.ExitCode != 0) {
			bad++
		}
	}
	return bad
}

// describeInstance says where an instance is and how it ended, e.g.
// "running on stub1 pid 4242" or "failed exit 3 on stub2".
func describeInstance(in client.Instance) string {
	on := ""
	if in.Machine != "" {
		on = " on " + in.Machine
	}
	switch in.State {
	case client.InstanceRunning:
		return fmt.Sprintf("running%s pid %d", on, in.PID)
	case client.InstanceExited:
		return fmt.Sprintf("exited %d%s", in.ExitCode, on)
	case client.InstanceFailed:
		if in.Error != "" {
			return fmt.Sprintf("failed%s: %s", on, in.Error)
		}
		return fmt.Sprintf("failed exit %d%s", in.ExitCode, on)
	case client.InstanceSignaled:
		return fmt.Sprintf("signaled %s%s", orDash(in.Signal), on)
	case client.InstanceKilled:
		if in.Signal != "" {
			return fmt.Sprintf("killed (%s)%s", in.Signal, on)
		}
		return "killed" + on
	default: // queued, placed, lost and states this CLI does not know yet
		return in.State + on
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// countFlags reads repeated NAME:N values (--gres, --license; bare allows
// NAME alone for 1), each NAME once; a value may also hold several,
// comma-separated.
func countFlags(vals []string, bare bool) (map[string]int, error) {
	m := map[string]int{}
	for _, v := range splitList(vals) {
		name, n, err := spec.ParseCount(v, bare)
		if err != nil {
			return nil, err
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s given twice", name)
		}
		m[name] = n
	}
	return m, nil
}
