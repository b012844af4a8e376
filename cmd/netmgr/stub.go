package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/stub"
)

func stubCommand() *cli.Command {
	return withConfigFile(&cli.Command{
		Name:  "stub",
		Usage: "run the stub of this machine: it starts and watches the jobs placed here",
		UsageText: "netmgr stub --data-dir DIR --join GOSSIP_ADDR,... [--name NAME] [--http ADDR]\n" +
			"    [--gossip ADDR] [--exec-dir DIR] [--exec-retention D] [--init FILE]\n" +
			"    [--min-free-disk SIZE|PCT] [--min-free-inodes N|PCT]\n" +
			"    [--health-check PROGRAM [--health-check-interval D]]\n" +
			"    [--prologue PROGRAM] [--epilogue PROGRAM] [--script-timeout D]\n" +
			"    [--sleep-on-login D] [--sleep-on-input D] [--sleep-on-load LOAD]\n" +
			"    [--load-monitor PROGRAM] [--available WINDOWS] [--vacate-after D] [--keep-suspended]\n" +
			"    [--leave] [--log-level LEVEL] [--config FILE]",
		Description: "Runs this machine's stub until SIGINT or SIGTERM. It joins the gossip pool of\n" +
			"the servers, reports the machine's facts and load, runs the jobs the servers\n" +
			"place here in --exec-dir and reports when they start and end. For example:\n\n" +
			"   netmgr stub --name flute --data-dir /var/lib/netmgr/stub \\\n" +
			"       --http 10.0.0.9:17656 --gossip 10.0.0.9:17658 --join 10.0.0.1:17648\n\n" +
			"Each attempt of a job runs in a directory of its own,\n\n" +
			"   EXEC_DIR/CLUSTER/JOB.INSTANCE.ATTEMPT\n\n" +
			"CLUSTER naming the cluster's CA (\"insecure\" with --insecure), and its standard\n" +
			"output and error are the files stdout and stderr there: job 12's first\n" +
			"instance, first attempt writes /tmp/nmgr/3f2a9c0e4b1d7a65/12.0.1/stdout. The\n" +
			"stub never reuses a directory that exists (a start fails instead, and the job\n" +
			"is tried again), so clusters may share an exec dir. Once an attempt has ended\n" +
			"and a server has committed its end, its directory is kept for --exec-retention\n" +
			"and then removed, also across restarts of the stub; /metrics reports the\n" +
			"space the exec dir takes (netmgr_stub_exec_dir_used_bytes).\n\n" +
			"--init FILE describes the machine in the database language's syntax, e.g.\n\n" +
			"   mtype=sparc1+\n" +
			"   mem=32\n" +
			"   rating=8.0\n" +
			"   nprocs=1\n" +
			"   keys={fpu}\n" +
			"   mounts={/usr/u/fred/data}\n\n" +
			"A machine declared in the servers' database takes its type and attributes from\n" +
			"there; the init file and the detected facts fill in the rest.\n\n" +
			"The stub drains its machine by itself, with the reason, while it cannot run jobs\n" +
			"well: the file system of --exec-dir or --data-dir has less free space than\n" +
			"--min-free-disk or fewer free inodes than --min-free-inodes (looked at every 5 s),\n" +
			"an attempt's directory or output files cannot be made, or the site's\n" +
			"--health-check program fails. netstatus -m then shows, for example,\n\n" +
			"   draining (exec dir full: 0 B free)\n\n" +
			"The servers place nothing there meanwhile; running jobs are left alone. A job\n" +
			"that fails because of it (its output could not be written) goes back to the\n" +
			"queue without counting an attempt. The machine takes work again by itself once\n" +
			"the fault clears. --health-check PROGRAM runs every --health-check-interval, as\n" +
			"Slurm's HealthCheckProgram does: a non-zero exit or any output drains the\n" +
			"machine, with the first line printed as the reason, until a run passes.\n\n" +
			"--prologue and --epilogue PROGRAM run as the stub's user (root) before and\n" +
			"after every attempt, as Slurm's Prolog and Epilog do, with NETMGR_SCRIPT,\n" +
			"NETMGR_JOB_ID, NETMGR_JOB_NAME, NETMGR_INSTANCE, NETMGR_ATTEMPT, NETMGR_OWNER,\n" +
			"NETMGR_USER, NETMGR_MACHINE and NETMGR_EXEC_DIR in their environment (the\n" +
			"epilogue also NETMGR_EXIT_CODE, NETMGR_SIGNAL and NETMGR_REASON); their output\n" +
			"goes to the stub's log, and each is killed after --script-timeout. A prologue\n" +
			"that fails (non-zero exit, or timeout) drains the machine with the reason\n" +
			"(\"prologue failed: PROGRAM exit status 1: first line\") and sends the instance\n" +
			"back to the queue without counting a restart: it runs elsewhere. A failing\n" +
			"epilogue drains the machine too. Either drain lasts until the stub is reloaded\n" +
			"(SIGHUP) or restarted, once an admin has seen to the cause.\n\n" +
			ownerDescription +
			"A damaged outbox (DIR/outbox.db, corrupt or truncated) stops the stub at start\n" +
			"with one line naming it. Move it aside and start the stub again: it finds the\n" +
			"running jobs and the recorded ends of the others in DIR/attempts.\n\n" +
			"While it sees no server in the gossip pool (the whole server group is down),\n" +
			"the stub joins the --join addresses and every server it has seen again, every\n" +
			"few seconds, until one answers: a server group restarted after an outage of\n" +
			"any length finds its machines without a restart of the stubs.\n\n" +
			"SIGTERM (what systemctl restart and stop send) stops the stub to be started\n" +
			"again: the running jobs run on under the supervisor host, netstatus -m shows the\n" +
			"machine restarting and its jobs running, and the new stub takes them over and\n" +
			"reports their ends. Past the servers' --restart-grace without a new stub, the\n" +
			"machine's jobs are declared lost (restartable ones start elsewhere). SIGINT, or\n" +
			"SIGTERM with --leave, makes the stub leave the pool for good instead: the\n" +
			"machine goes down at once, and its jobs that cannot restart elsewhere are lost.\n\n" +
			"Users of this machine reach the servers through --socket (netexec and the other\n" +
			"commands use it when it exists): the stub reads each caller's uid from the\n" +
			"kernel and vouches for it, so jobs submitted there run as their submitter.\n" +
			"Every link is TLS 1.3 with the cluster's certificates: the stub's certificate\n" +
			"(netmgr tls cert create --stub NAME) must name this machine. SIGHUP reads the\n" +
			"certificate and --gossip-keyring files again. --insecure runs without any of it.\n\n" +
			configDescription("stub") +
			"It prints 'stub NAME api https://HOST:PORT' once it listens.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "machine `NAME` (default: the host name)"},
			&cli.StringFlag{Name: "data-dir", Usage: "`DIR` for the event outbox (required)"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:17656", Usage: "stub API listen address `HOST:PORT` (port 0 picks one)"},
			&cli.StringFlag{Name: "gossip", Value: "127.0.0.1:17658", Usage: "gossip bind address `HOST:PORT` (TCP and UDP)"},
			&cli.StringSliceFlag{Name: "join", Usage: "gossip addresses (`HOST:PORT`) of servers or other stubs, comma-separated or repeated (required)"},
			&cli.StringFlag{Name: "exec-dir", Usage: "`DIR` jobs run in (default " + stub.DefaultExecDir + ")"},
			&cli.DurationFlag{Name: "exec-retention", Value: stub.DefaultExecRetention,
				Usage: "keep an ended attempt's directory (its stdout and stderr) for `DURATION` after its end is committed, then remove it"},
			&cli.StringFlag{Name: "init", Usage: "machine init `FILE`: its mtype, mem, rating, nprocs, keys and mounts"},
			&cli.StringFlag{Name: "min-free-disk", Value: "256MiB,1%",
				Usage: "drain the machine while the exec or data dir has less free space than `SIZE` (256MiB, 2G), a percentage of its file system (1%), or the smaller of both (256MiB,1%); 0 turns it off"},
			&cli.StringFlag{Name: "min-free-inodes", Value: "1000,1%",
				Usage: "drain the machine while the exec or data dir has fewer free inodes than `N`, a percentage, or the smaller of both; 0 turns it off"},
			&cli.StringFlag{Name: "health-check", Usage: "site health-check `PROGRAM`: a non-zero exit or any output drains the machine, its first line the reason"},
			&cli.DurationFlag{Name: "health-check-interval", Value: stub.DefaultHealthCheckEvery,
				Usage: "run --health-check every `DURATION` (it is killed if it takes longer)"},
			&cli.StringFlag{Name: "prologue", Usage: "run `PROGRAM` as root before every attempt; a failure drains the machine and requeues the instance uncounted"},
			&cli.StringFlag{Name: "epilogue", Usage: "run `PROGRAM` as root after every attempt; a failure drains the machine"},
			&cli.DurationFlag{Name: "script-timeout", Value: stub.DefaultScriptTimeout,
				Usage: "kill --prologue or --epilogue after `DURATION`, which counts as a failure"},
			&cli.StringFlag{Name: "socket", Value: defaultSocket, Usage: "Unix socket `PATH` on which this machine's users reach the servers as themselves (\"\" for none)"},
			&cli.BoolFlag{Name: "leave", Usage: "on SIGTERM, leave the pool for good (decommission), as on SIGINT, instead of stopping to be restarted"},
			logLevelFlag(), logFormatFlag(),
		}, append(ownerFlags(), agentTLSFlags("stub")...)...),
		Action: runStub,
	}, "stub")
}

func runStub(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q", cCtx.Args().First())
	}
	if err := requireFlags(cCtx, "data-dir"); err != nil {
		return err
	}
	join := splitList(cCtx.StringSlice("join"))
	if len(join) == 0 {
		return usagef("--join is required: the gossip address of at least one server")
	}
	minDisk, err := stub.ParseThreshold(cCtx.String("min-free-disk"), true)
	if err != nil {
		return usagef("--min-free-disk: %v", err)
	}
	minInodes, err := stub.ParseThreshold(cCtx.String("min-free-inodes"), false)
	if err != nil {
		return usagef("--min-free-inodes: %v", err)
	}
	if d := cCtx.Duration("health-check-interval"); d <= 0 {
		return usagef("--health-check-interval must be positive, got %v", d)
	}
	if d := cCtx.Duration("script-timeout"); d <= 0 {
		return usagef("--script-timeout must be positive, got %v", d)
	}
	ownerCfg, err := ownerConfig(cCtx)
	if err != nil {
		return err
	}
	logger, err := newLogger(cCtx, cCtx.App.ErrWriter)
	if err != nil {
		return err
	}
	material, err := agentTLS(cCtx, logger)
	if err != nil {
		return err
	}
	keyring, err := agentKeyring(cCtx, material)
	if err != nil {
		return err
	}
	name := cCtx.String("name")
	if name == "" {
		if name, err = os.Hostname(); err != nil {
			return fmt.Errorf("default machine name: %w", err)
		}
	}
	st, err := stub.New(stub.Config{
		Name:       name,
		DataDir:    cCtx.String("data-dir"),
		HTTPAddr:   cCtx.String("http"),
		GossipAddr: cCtx.String("gossip"),
		Join:       join,
		ExecDir:    cCtx.String("exec-dir"),
		InitFile:   cCtx.String("init"),
		Logger:     logger,

		TLS:           material,
		GossipKeyring: keyring,
		Socket:        cCtx.String("socket"),

		ExecRetention: cCtx.Duration("exec-retention"),

		MinFreeDisk:      minDisk,
		MinFreeInodes:    minInodes,
		HealthCheck:      cCtx.String("health-check"),
		HealthCheckEvery: cCtx.Duration("health-check-interval"),
		Prologue:         cCtx.String("prologue"),
		Epilogue:         cCtx.String("epilogue"),
		ScriptTimeout:    cCtx.Duration("script-timeout"),

		Owner:         ownerCfg,
		VacateAfter:   cCtx.Duration("vacate-after"),
		KeepSuspended: cCtx.Bool("keep-suspended"),
	})
	if err != nil {
		return fmt.Errorf("start stub: %w", err)
	}
	if material != nil || keyring != "" || cCtx.String("prologue") != "" || cCtx.String("epilogue") != "" {
		reloadOnHangup(cCtx.Context, logger, st.Reload)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	fmt.Fprintf(cCtx.App.Writer, "stub %s api %s%s\n", name, scheme(material), st.HTTPAddr())
	<-cCtx.Context.Done()
	leave := cCtx.Bool("leave")
	select {
	case sig := <-sigs: // delivered with the one that ended the context
		leave = leave || sig == os.Interrupt
	case <-time.After(time.Second):
		leave = true // not ended by a signal
	}
	stop := st.Restart
	if leave {
		stop = st.Shutdown
	}
	logger.Info("shutting down", "stub", name, "leave", leave)
	if err := stop(); err != nil {
		return fmt.Errorf("shut down stub: %w", err)
	}
	return nil
}
