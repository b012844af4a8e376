package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/internal/buildinfo"
	"github.com/netmgr/netmgr/server"
)

func serverCommand() *cli.Command {
	return withConfigFile(&cli.Command{
		Name:  "server",
		Usage: "run a server: one replica of the job and machine database",
		UsageText: "netmgr server --name NAME --data-dir DIR [--http ADDR] [--raft ADDR] [--gossip ADDR]\n" +
			"    [--bootstrap-expect N] [--join GOSSIP_ADDR,...] [--database FILE] [--outage-grace D]\n" +
			"    [--job-retention D] [--job-retention-count N] [--history-retention D]\n" +
			"    [--user-rate N] [--user-burst N] [--user-streams N] [--user-blob-quota MiB]\n" +
			"    [--smtp HOST:PORT [--smtp-user USER --smtp-password-file FILE] [--smtp-starttls POLICY] |\n" +
			"     --sendmail PROGRAM] [--mail-from ADDRESS] [--mail-domain DOMAIN] [--log-level LEVEL] [--config FILE]",
		Description: fmt.Sprintf("Runs one member of the server group until SIGINT or SIGTERM. Start three (or\n"+
			"five) with the same --bootstrap-expect; they find each other through --join and\n"+
			"form the group once that many are seen. A server started with\n"+
			"--bootstrap-expect 0 waits to be added to an existing group. For example:\n\n"+
			"   netmgr server --name s1 --data-dir /var/lib/netmgr/s1 --bootstrap-expect 3 \\\n"+
			"       --http 10.0.0.1:17646 --raft 10.0.0.1:17647 --gossip 10.0.0.1:17648 \\\n"+
			"       --join 10.0.0.2:17648,10.0.0.3:17648\n\n"+
			"--database FILE is the machine database (keys, mtypes, machines, queues) the\n"+
			"group starts with when it is first formed; later changes go through\n"+
			"'netmgr admin load FILE'. A file with errors stops the server from starting.\n\n"+
			"When every server is down, paused or cut off from the machines, jobs keep\n"+
			"running: a stub whose lease ran out keeps its restartable jobs while more than\n"+
			"half of the pool's stubs say their leases ran out too, for up to --outage-grace\n"+
			"(default %v, at most %v; 0 stops them when the lease runs out, as a\n"+
			"machine cut off alone always does).\n\n"+
			"A finished job (every instance ended) stays in the database, listed by\n"+
			"'netstatus -j', for --job-retention after it ended (default %v; 0 keeps\n"+
			"finished jobs for ever), and at most --job-retention-count of them\n"+
			"(default %d; 0: no limit), the earliest ended going first: a pool\n"+
			"finishing fewer than 70 jobs a minute keeps its whole day, and a large one\n"+
			"keeps its database, snapshots and restarts small (some 190 MiB of memory\n"+
			"per server for 100,000 finished jobs, 1.9 GiB for a million). The leader\n"+
			"removes them in one logged step, so every server drops the same jobs. A job a\n"+
			"held job waits for stays until that one is decided, and a cron job until its\n"+
			"schedule ended and its runs are gone. A command naming a removed job by id\n"+
			"says it was removed.\n\n"+
			"Every server also keeps the history (history.db in the data dir): every ended\n"+
			"attempt and every event, for 'netmgr history' and 'netmgr events', for\n"+
			"--history-retention (default 90 days; 0 keeps it for ever). Each server sweeps\n"+
			"its own copy; a server that was down fetches what it missed from the others.\n\n"+
			"After the whole group was down, start the servers again on their data\n"+
			"directories: the leader joins the gossip pool of every machine of the database\n"+
			"it does not see (asking the stub at its API address for its gossip address),\n"+
			"and the stubs join their --join addresses again, so the machines come back by\n"+
			"themselves.\n\n"+
			"A damaged file in --data-dir (raft.db or a snapshot under snapshots/, corrupt\n"+
			"or truncated) stops the server at start with one line naming it. To recover,\n"+
			"with the rest of the group running, move the whole data dir aside and start\n"+
			"the server again with an empty one and the same --name and --raft: it rejoins\n"+
			"the group and installs a snapshot from the leader. Do one server at a time.\n\n"+
			"Every link is TLS 1.3 with the cluster's certificates (--ca-file, --cert-file,\n"+
			"--key-file; see 'netmgr tls --help'), and gossip is encrypted with\n"+
			"--gossip-keyring. SIGHUP reads the certificate and keyring files again.\n"+
			"--insecure runs without any of it.\n\n"+
			"One user cannot starve the others. Each server holds a second, then answers\n"+
			"with 429 and Retry-After, one user's requests past --user-rate a second (in\n"+
			"bursts of --user-burst), which netexec and netmgr wait out (root on a pool\n"+
			"machine and the database's admin_ids are exempt); refuses a user's log or\n"+
			"event stream past --user-streams open at it; and refuses copy_in files that\n"+
			"would take the blobs a user's jobs keep past --user-blob-quota, at the upload\n"+
			"and again at submit. 0 turns a limit off.\n\n"+
			"Mail (netexec's mail and mail_type, and the failure mail the database's\n"+
			"admin_ids get: a machine down, a server removed, instances lost, a job that\n"+
			"failed after its last restart) is sent by the leader through the SMTP relay\n"+
			"of --smtp (STARTTLS per --smtp-starttls, authentication with --smtp-user and\n"+
			"--smtp-password-file) or the --sendmail program, from --mail-from; give every\n"+
			"server the same. Each message is recorded sent in the log; a new leader sends\n"+
			"what is not recorded again with the same Message-ID, so a leader that dies\n"+
			"between sending and recording causes one duplicate at most. Failed sends are\n"+
			"retried with backoff (from 5 s to 10 min, given up after 12 attempts) and\n"+
			"show in 'netmgr events' and /metrics. For example:\n\n"+
			"   netmgr server ... --smtp mail.example.org:587 --smtp-user netmgr \\\n"+
			"       --smtp-password-file /etc/netmgr/smtp.pw --mail-from netmgr@example.org\n\n"+
			configDescription("server")+
			"It prints 'server NAME api https://HOST:PORT' once it listens.", server.DefaultOutageGrace, server.MaxOutageGrace, server.DefaultJobRetention, server.DefaultJobRetentionCount),
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "unique server `NAME`, also its Raft id (required)"},
			&cli.StringFlag{Name: "data-dir", Usage: "`DIR` for the Raft log and snapshots (required)"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:17646", Usage: "API listen address `HOST:PORT` (port 0 picks one)"},
			&cli.StringFlag{Name: "raft", Value: "127.0.0.1:17647", Usage: "Raft transport address `HOST:PORT`"},
			&cli.StringFlag{Name: "gossip", Value: "127.0.0.1:17648", Usage: "gossip bind address `HOST:PORT` (TCP and UDP)"},
			&cli.IntFlag{Name: "bootstrap-expect", Usage: "form a new group once `N` servers are seen; 0 joins an existing group"},
			&cli.StringSliceFlag{Name: "join", Usage: "gossip addresses (`HOST:PORT`) of other servers or stubs, comma-separated or repeated"},
			&cli.StringFlag{Name: "database", Usage: "machine database `FILE` to load when the group is first formed"},
			&cli.DurationFlag{Name: "outage-grace", Value: server.DefaultOutageGrace, Usage: "how long restartable jobs run on through a whole-control-plane outage (`DURATION`)"},
			&cli.IntFlag{Name: "lease-relay-from", Value: server.DefaultLeaseRelayFrom, Usage: "from a pool of `N` machines, stubs renew their leases on the followers' streams, which pass the renewals to the leader in batches (0: always with the leader)"},
			&cli.DurationFlag{Name: "restart-grace", Value: server.DefaultRestartGrace, Usage: "how long the jobs of a machine whose stub stopped to restart run on before they are declared lost (`DURATION`; 0: a stopping stub leaves the pool)"},
			&cli.DurationFlag{Name: "job-retention", Value: server.DefaultJobRetention, Usage: "how long a finished job stays in the database (`DURATION`; 0 keeps it)"},
			&cli.IntFlag{Name: "job-retention-count", Value: server.DefaultJobRetentionCount, Usage: "keep at most `N` finished jobs, the earliest ended going first (0: no limit); the default bounds a large pool's database, snapshots and restart time whatever its rate of work"},
			&cli.DurationFlag{Name: "history-retention", Value: server.DefaultHistoryRetention, Usage: "how long this server keeps ended attempts and events in its history (`DURATION`; 0 keeps them)"},
			&cli.DurationFlag{Name: "snapshot-interval", Value: server.DefaultSnapshotInterval, Usage: "how often the server compacts its Raft log into a snapshot once 8192 entries arrived (`DURATION`); a restart replays the entries since the last one"},
			&cli.IntFlag{Name: "max-copy-size", Value: int(files.DefaultMaxSize >> 20), Usage: "the most a job's copy_in files, and one attempt's copy_out, may take, in `MiB`"},
			&cli.IntFlag{Name: "user-blob-quota", Value: server.DefaultUserBlobQuota >> 20, Usage: "the most one user's jobs may keep in the blob store (copy_in, kept outputs), in `MiB` (0: no limit)"},
			&cli.IntFlag{Name: "user-streams", Value: server.DefaultUserStreams, Usage: "the most log, event and session streams one user may have open at this server (`N`; 0: no limit)"},
			&cli.IntFlag{Name: "user-rate", Value: server.DefaultUserRate, Usage: "API requests a second one user may send to this server on average (`N`; 0: no limit; root on a pool machine and admin_ids are exempt)"},
			&cli.IntFlag{Name: "user-burst", Value: server.DefaultUserBurst, Usage: "the most API requests one user may send to this server at once (`N`: a bucket of N, refilled at --user-rate)"},
			logLevelFlag(), logFormatFlag(),
		}, append(mailFlags(), agentTLSFlags("server")...)...),
		Action: runServer,
	}, "server")
}

func runServer(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q", cCtx.Args().First())
	}
	if err := requireFlags(cCtx, "name", "data-dir"); err != nil {
		return err
	}
	if n := cCtx.Int("bootstrap-expect"); n < 0 {
		return usagef("--bootstrap-expect must not be negative, got %d", n)
	}
	if d := cCtx.Duration("job-retention"); d < 0 {
		return usagef("--job-retention must not be negative, got %v", d)
	}
	if d := cCtx.Duration("history-retention"); d < 0 {
		return usagef("--history-retention must not be negative, got %v", d)
	}
	if d := cCtx.Duration("snapshot-interval"); d < time.Second {
		return usagef("--snapshot-interval must be at least 1s, got %v", d)
	}
	if n := int64(cCtx.Int("max-copy-size")); n < 1 {
		return usagef("--max-copy-size must be at least 1 (MiB), got %d", n)
	}
	for _, name := range []string{"user-blob-quota", "user-streams", "user-rate", "user-burst"} {
		if n := cCtx.Int(name); n < 0 {
			return usagef("--%s must not be negative, got %d", name, n)
		}
	}
	if n := cCtx.Int("job-retention-count"); n < 0 {
		return usagef("--job-retention-count must not be negative, got %d", n)
	}
	mail, err := mailConfig(cCtx)
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
	srv, err := server.New(server.Config{
		Name:              cCtx.String("name"),
		DataDir:           cCtx.String("data-dir"),
		HTTPAddr:          cCtx.String("http"),
		RaftAddr:          cCtx.String("raft"),
		GossipAddr:        cCtx.String("gossip"),
		BootstrapExpect:   cCtx.Int("bootstrap-expect"),
		Join:              splitList(cCtx.StringSlice("join")),
		DatabaseFile:      cCtx.String("database"),
		OutageGrace:       cCtx.Duration("outage-grace"),
		RestartGrace:      cCtx.Duration("restart-grace"),
		LeaseRelayFrom:    cCtx.Int("lease-relay-from"),
		JobRetention:      cCtx.Duration("job-retention"),
		JobRetentionCount: cCtx.Int("job-retention-count"),
		HistoryRetention:  cCtx.Duration("history-retention"),
		SnapshotInterval:  cCtx.Duration("snapshot-interval"),
		MaxCopySize:       int64(cCtx.Int("max-copy-size")) << 20,
		UserBlobQuota:     noLimitIfZero(int64(cCtx.Int("user-blob-quota")) << 20),
		UserStreams:       noLimitIfZero(cCtx.Int("user-streams")),
		UserRate:          float64(noLimitIfZero(cCtx.Int("user-rate"))),
		UserBurst:         cCtx.Int("user-burst"),
		Logger:            logger,
		Version:           buildinfo.Get(version, commit).Short(),
		TLS:               material,
		GossipKeyring:     keyring,
		Mail:              mail,
	})
	if err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	if material != nil || keyring != "" {
		reloadOnHangup(cCtx.Context, logger, srv.Reload)
	}
	fmt.Fprintf(cCtx.App.Writer, "server %s api %s%s\n", cCtx.String("name"), scheme(material), srv.HTTPAddr())
	<-cCtx.Context.Done()
	logger.Info("shutting down", "server", cCtx.String("name"))
	if err := srv.Shutdown(); err != nil {
		return fmt.Errorf("shut down server: %w", err)
	}
	return nil
}

// noLimitIfZero maps a limit flag's 0 (no limit) to the server's -1 (its
// 0 is the default).
func noLimitIfZero[T int | int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
