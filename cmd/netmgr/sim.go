package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/stub"
)

func simCommand() *cli.Command {
	return &cli.Command{
		Name:  "sim",
		Usage: "run many simulated stubs in one process, for tests and benchmarks at scale",
		UsageText: "netmgr sim --data-dir DIR --join GOSSIP_ADDR,... [--count N] [--prefix PREFIX] [--first F]\n" +
			"    [--http ADDR] [--gossip ADDR] [--run-time DURATION] [--slots N] [--mem MB]\n" +
			"    [--init FILE] [--own-address | --whole-stubs [--exec-dir DIR]] [--commands] [--log-level LEVEL]",
		Description: "Runs --count simulated machines named PREFIX-F ... PREFIX-(F+N-1) (F is --first,\n" +
			"0 unless given) in this process\n" +
			"until SIGINT or SIGTERM, to try the servers with many machines without as many\n" +
			"hosts. Each speaks to the servers as a real stub does: its own certificate and\n" +
			"name, lease renewals, Starts and Signals on its API, CHILD_REGISTER and\n" +
			"CHILD_TERM reported until a server answers, and a gossip member of its own that\n" +
			"the servers probe, suspect and declare dead. The machines share what a real\n" +
			"pool would not need to share: one process, its timers, the host's facts, and no\n" +
			"member list (a simulated member answers probes and refutes suspicion but\n" +
			"gossips nothing on its own), so that 10,000 fit on one small host. A job gets a\n" +
			"fake pid, runs for --run-time and exits 0; a signal that kills ends it. For\n" +
			"example, 100 machines of 4 slots each whose jobs run 2 s:\n\n" +
			"   netmgr sim --count 100 --slots 4 --run-time 2s --data-dir /tmp/sim \\\n" +
			"       --http 127.1.0.1:20000 --gossip 127.1.0.1:30000 --join 127.0.0.1:17648\n\n" +
			"Machine i listens on the port of --http plus i and gossips on the port of\n" +
			"--gossip plus i (port 0: each picks a free port). With --own-address it has a\n" +
			"host of its own instead, the host of --http plus i (127.77.0.1, 127.77.0.2,\n" +
			"...; any of 127.0.0.0/8 is this host), on the ports of --http and --gossip,\n" +
			"which one socket each, bound to every address, serves for all machines: that\n" +
			"keeps 10,000 machines within 20,000 open files and off the ports others use\n" +
			"(port 0 picks one port for all). A job's binary must exist here, as on a real\n" +
			"machine. --slots and --mem are the machines' nprocs and mem claims, as an init\n" +
			"file makes them.\n\n" +
			"--whole-stubs runs a whole stub per machine instead (its outbox in DIR/NAME/data,\n" +
			"its jobs' directories in DIR/NAME/exec or EXEC_DIR/NAME, a member list of its\n" +
			"own): every part of the stub above the fork, at a cost that grows with the\n" +
			"square of the count.\n\n" +
			"The machines are secure as real ones: --ca-dir names the directory of the\n" +
			"cluster's CA (ca.pem and ca-key.pem, as `netmgr tls ca create` writes them) and\n" +
			"each simulated machine gets a stub certificate of its name, made at start and\n" +
			"kept in DIR/NAME/tls. --insecure runs them without TLS, for an --insecure group.\n\n" +
			"It prints 'stub NAME api https://HOST:PORT' for each machine once all listen,\n" +
			"then 'joined N machines in DURATION'. With --commands it reads commands from\n" +
			"standard input, one a line: 'kill NAME' cuts machine NAME off as a power cut\n" +
			"would (it answers nothing more, and its jobs vanish), printing 'killed NAME';\n" +
			"'stats' prints 'stats machines=N killed=K refuted=R stopped=S peer-misses=P\n" +
			"bare-rounds=B', R the suspicions of its machines they refuted (a server\n" +
			"suspected a machine that was answering), S the restartable jobs its machines\n" +
			"stopped because their leases ran out while most of the pool held theirs (the\n" +
			"outage ride-out, as a stub's), P the outage rounds in which another process\n" +
			"named by outage-peers did not answer in time, B the rounds near an outage that\n" +
			"found no majority of the pool cut off or came too late; 'outage-peers\n" +
			"NAME@ADDR[,NAME@ADDR...] ...' names machines (name and API address) of each\n" +
			"other sim process of the same pool, an argument a process, whose tallies its\n" +
			"outage rounds then add to its own, so that a pool split over processes rides\n" +
			"out an outage as one; it prints 'outage-peers N', N the processes.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "count", Value: 10, Usage: "number `N` of simulated stubs"},
			&cli.StringFlag{Name: "prefix", Value: "sim", Usage: "machine names are `PREFIX`-F, PREFIX-(F+1), ... (F is --first)"},
			&cli.IntFlag{Name: "first", Usage: "number `F` of the first machine's name, PREFIX-F: several processes, each with its own open-file limit, can then share one pool"},
			&cli.StringFlag{Name: "data-dir", Usage: "`DIR` holding a directory per stub (required)"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:0", Usage: "API address `HOST:PORT` of the first stub; the next ones count up from it"},
			&cli.StringFlag{Name: "gossip", Value: "127.0.0.1:0", Usage: "gossip address `HOST:PORT` of the first stub; the next ones count up from it"},
			&cli.StringSliceFlag{Name: "join", Usage: "gossip addresses (`HOST:PORT`) of servers or other stubs, comma-separated or repeated (required)"},
			&cli.DurationFlag{Name: "run-time", Value: time.Second, Usage: "`DURATION` each simulated job runs before it exits 0"},
			&cli.IntFlag{Name: "slots", Usage: "instances (`N`) each machine runs at once, its nprocs claim; 0 keeps the host's CPUs"},
			&cli.Int64Flag{Name: "mem", Usage: "memory `MB` each machine claims; 0 keeps the host's"},
			&cli.StringFlag{Name: "exec-dir", Usage: "`DIR` holding the jobs' directories of each stub, with --whole-stubs (default: DIR/NAME/exec)"},
			&cli.StringFlag{Name: "init", Usage: "machine init `FILE` every stub reads: mtype, mem, rating, nprocs, keys and mounts"},
			&cli.StringFlag{Name: "ca-dir", Usage: "`DIR` of the cluster CA (ca.pem, ca-key.pem): each stub gets a certificate of its machine"},
			&cli.StringFlag{Name: "gossip-keyring", Usage: "gossip encryption keyring `FILE`"},
			&cli.BoolFlag{Name: "insecure", Usage: "run the stubs without TLS (for a group started with --insecure)"},
			&cli.BoolFlag{Name: "whole-stubs", Usage: "run a whole stub per machine (outbox, exec dirs, member list) instead of the shared simulator"},
			&cli.BoolFlag{Name: "own-address", Usage: "give machine i the host of --http and --gossip plus i (an IPv4 in 127.0.0.0/8) on their ports, all served by one socket each"},
			&cli.Float64Flag{Name: "join-rate", Usage: "machines (`N`) that begin to join a second at most, as a pool booting over minutes would; 0: as fast as the servers answer (simulator only)"},
			&cli.BoolFlag{Name: "commands", Usage: "read commands from standard input, one a line: 'kill NAME' or 'stats'"},
			logLevelFlag(), logFormatFlag(),
		},
		Action: runSim,
	}
}

func runSim(cCtx *cli.Context) error {
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
	n := cCtx.Int("count")
	if n < 1 {
		return usagef("--count must be at least 1, got %d", n)
	}
	if cCtx.Int("first") < 0 {
		return usagef("--first must not be negative, got %d", cCtx.Int("first"))
	}
	if cCtx.Duration("run-time") < 0 || cCtx.Int("slots") < 0 || cCtx.Int64("mem") < 0 {
		return usagef("--run-time, --slots and --mem must not be negative")
	}
	spread := countUp
	if cCtx.Bool("own-address") {
		if cCtx.Bool("whole-stubs") {
			return usagef("--own-address works without --whole-stubs only")
		}
		spread = hostsUp
	}
	httpAddrs, err := spread(cCtx.String("http"), n)
	if err != nil {
		return usagef("--http: %v", err)
	}
	gossipAddrs, err := spread(cCtx.String("gossip"), n)
	if err != nil {
		return usagef("--gossip: %v", err)
	}
	logger, err := newLogger(cCtx, cCtx.App.ErrWriter)
	if err != nil {
		return err
	}
	var ca *pki.CA
	switch {
	case cCtx.Bool("insecure") && cCtx.String("ca-dir") != "":
		return usagef("--insecure and --ca-dir contradict each other; give one or the other")
	case cCtx.Bool("insecure"):
		logger.Warn("running INSECURE (--insecure): the simulated stubs use no TLS")
	case cCtx.String("ca-dir") == "":
		return usagef("--ca-dir is required (the cluster CA's directory, to make each simulated machine's certificate), or --insecure")
	default:
		if ca, err = pki.LoadCA(cCtx.String("ca-dir")); err != nil {
			return err
		}
	}
	sim := stub.Simulation{RunTime: cCtx.Duration("run-time"), Slots: cCtx.Int("slots"), MemoryMB: cCtx.Int64("mem")}
	switch rate := cCtx.Float64("join-rate"); {
	case rate < 0:
		return usagef("--join-rate must be a number of machines a second, 0 or more; got %v", rate)
	case rate > 0 && cCtx.Bool("whole-stubs"):
		return usagef("--join-rate works without --whole-stubs only")
	}
	if !cCtx.Bool("whole-stubs") {
		if cCtx.String("exec-dir") != "" {
			return usagef("--exec-dir needs --whole-stubs: the shared simulator makes no exec dirs")
		}
		return runSimPool(cCtx, logger, ca, sim, join, httpAddrs, gossipAddrs)
	}
	if cCtx.Bool("commands") {
		return usagef("--commands works without --whole-stubs only")
	}
	dataDir, execDir := cCtx.String("data-dir"), cCtx.String("exec-dir")

	var stubs []*stub.Stub
	for i := range n {
		name := simName(cCtx, i)
		cfg := stub.Config{
			Name:       name,
			DataDir:    filepath.Join(dataDir, name, "data"),
			HTTPAddr:   httpAddrs[i],
			GossipAddr: gossipAddrs[i],
			Join:       join,
			ExecDir:    filepath.Join(dataDir, name, "exec"),
			InitFile:   cCtx.String("init"),
			Logger:     logger.With("machine", name),
			Simulate:   &sim,

			GossipKeyring: cCtx.String("gossip-keyring"),
		}
		if ca != nil {
			if cfg.TLS, err = simCertificate(ca, filepath.Join(dataDir, name, "tls"), name); err != nil {
				_ = shutdownAll(stubs)
				return err
			}
		}
		if execDir != "" {
			cfg.ExecDir = filepath.Join(execDir, name)
		}
		st, err := stub.New(cfg)
		if err != nil {
			_ = shutdownAll(stubs)
			return fmt.Errorf("start simulated stub %s: %w", name, err)
		}
		stubs = append(stubs, st)
	}
	sch := "http://"
	if ca != nil {
		sch = "https://"
	}
	for i, st := range stubs {
		fmt.Fprintf(cCtx.App.Writer, "stub %s api %s%s\n", simName(cCtx, i), sch, st.HTTPAddr())
	}
	<-cCtx.Context.Done()
	logger.Info("shutting down", "stubs", len(stubs))
	return shutdownAll(stubs)
}

// simName returns the name of the command's machine i: PREFIX-(F+i).
func simName(cCtx *cli.Context, i int) string {
	return fmt.Sprintf("%s-%d", cCtx.String("prefix"), cCtx.Int("first")+i)
}

// simCertificate makes (or reuses, from an earlier run) the stub
// certificate of machine name in dir and loads it.
func simCertificate(ca *pki.CA, dir, name string) (*pki.Material, error) {
	id := pki.Identity{Role: pki.RoleStub, Name: name}
	is := pki.Issued{ID: id}
	certName, keyName := is.FileNames()
	files := pki.Files{CA: filepath.Join(dir, pki.CAFile), Cert: filepath.Join(dir, certName), Key: filepath.Join(dir, keyName)}
	if _, err := os.Stat(files.Cert); err != nil {
		if is, err = ca.Issue(id, nil, pki.DefaultCertValidity); err != nil {
			return nil, err
		}
		if files, err = is.Write(dir); err != nil {
			return nil, fmt.Errorf("simulated stub %s: %w", name, err)
		}
		if err := os.WriteFile(files.CA, ca.CertPEM, 0o644); err != nil {
			return nil, fmt.Errorf("simulated stub %s: write CA: %w", name, err)
		}
	}
	return pki.Load(files)
}

// countUp returns n addresses: addr, then addr's port plus 1, 2, ...;
// port 0 stays 0 for every one (each picks a free port).
func countUp(addr string, n int) ([]string, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("bad port %q", portStr)
	}
	if port > 0 && port+n-1 > 65535 {
		return nil, fmt.Errorf("%d ports from %d run past 65535", n, port)
	}
	out := make([]string, n)
	for i := range out {
		p := port
		if p > 0 {
			p += i
		}
		out[i] = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return out, nil
}

// hostsUp returns n addresses: addr, then addr's host plus 1, 2, ... on
// the same port; the hosts must stay within 127.0.0.0/8, every one of
// which is this host's.
func hostsUp(addr string, n int) ([]string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host).To4()
	if ip == nil || ip[0] != 127 {
		return nil, fmt.Errorf("%q is not an IPv4 address in 127.0.0.0/8 (loopback)", host)
	}
	first := binary.BigEndian.Uint32(ip)
	if uint64(first)+uint64(n)-1 > 0x7fffffff-1 {
		return nil, fmt.Errorf("%d hosts from %s run past 127.255.255.254", n, host)
	}
	out := make([]string, n)
	for i := range out {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], first+uint32(i))
		out[i] = net.JoinHostPort(net.IP(b[:]).String(), port)
	}
	return out, nil
}

// shutdownAll shuts the stubs down at once (each leaves the gossip pool,
// which takes up to a second) and returns their errors.
func shutdownAll(stubs []*stub.Stub) error {
	errs := make([]error, len(stubs))
	var wg sync.WaitGroup
	for i, st := range stubs {
		wg.Go(func() { errs[i] = st.Shutdown() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shut down simulated stubs: %w", err)
	}
	return nil
}
