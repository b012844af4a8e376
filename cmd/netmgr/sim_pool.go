package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/stub"
	"github.com/netmgr/netmgr/stub/simpool"
)

// simFDsPerMachine is about how many descriptors a simulated machine
// holds: its API listener, its gossip TCP listener and UDP socket, a
// lease stream with each of three servers (client.LeaseUpgrade: the
// leader's carries the renewals, the followers' wait for a leader change
// and stand for the connections client.WithWarmConnections keeps), a
// connection to the leader for its other requests, and one the leader
// opens to it for Starts. simWarmFDs of them are the streams with the
// followers, which a pool too large for the open-file limit does without
// (simpool.Config.ColdServers).
const (
	simFDsPerMachine = 8
	simWarmFDs       = 2
)

// runSimPool runs the shared simulator (package stub/simpool) until the
// command's context ends.
func runSimPool(cCtx *cli.Context, logger *slog.Logger, ca *pki.CA, sim stub.Simulation, join, httpAddrs, gossipAddrs []string) error {
	n := len(httpAddrs)
	perMachine := simFDsPerMachine
	if cCtx.Bool("own-address") {
		perMachine -= 3 // the listeners and socket are shared
	}
	want := uint64(n*perMachine + 1024)
	got, err := raiseFileLimit(want)
	if err != nil {
		return err
	}
	cold := got < want
	if cold {
		logger.Warn("the open-file limit holds no connection from each machine to each server: machines keep one to the leader only, "+
			"and a change of leader costs each a TLS handshake", "machines", n, "limit", got, "want", want)
		if need := want - uint64(n*simWarmFDs); got < need {
			logger.Warn("the open-file limit may be too low for this many machines (raise it with ulimit -n, or use --own-address)",
				"machines", n, "limit", got, "want", need)
		}
	}
	facts, err := stub.SimulatedFacts(cCtx.String("init"), sim)
	if err != nil {
		return err
	}
	cfg := simpool.Config{
		Join:        join,
		Facts:       facts,
		RunTime:     sim.RunTime,
		Logger:      logger,
		HTTPAddrs:   httpAddrs,
		GossipAddrs: gossipAddrs,
		Shared:      cCtx.Bool("own-address"),
		ColdServers: cold,
		JoinRate:    cCtx.Float64("join-rate"),
	}
	for i := range n {
		cfg.Names = append(cfg.Names, simName(cCtx, i))
	}
	if ca != nil {
		dataDir := cCtx.String("data-dir")
		cfg.TLS = func(name string) (*pki.Material, error) {
			return simCertificate(ca, filepath.Join(dataDir, name, "tls"), name)
		}
	}
	if path := cCtx.String("gossip-keyring"); path != "" {
		if cfg.Keys, err = pki.ReadKeyring(path); err != nil {
			return err
		}
	}
	began := time.Now()
	p, err := simpool.Start(cCtx.Context, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	sch := "http://"
	if ca != nil {
		sch = "https://"
	}
	out := bufio.NewWriter(cCtx.App.Writer)
	for _, m := range p.Machines() {
		fmt.Fprintf(out, "stub %s api %s%s\n", m.Name(), sch, m.HTTPAddr())
	}
	fmt.Fprintf(out, "joined %d machines in %v\n", n, time.Since(began).Round(time.Millisecond))
	if err := out.Flush(); err != nil {
		return fmt.Errorf("sim: write: %w", err)
	}
	if cCtx.Bool("commands") {
		go simCommands(cCtx.App.Reader, cCtx.App.Writer, p, logger)
	}
	<-cCtx.Context.Done()
	logger.Info("shutting down", "machines", n)
	return nil
}

// simCommands reads commands from r, one a line, until it ends: "kill
// NAME" kills machine NAME, "stats" prints the pool's counts (machines
// running and killed, suspicions refuted, attempts stopped by the
// lease), "outage-peers NAME@ADDR[,NAME@ADDR...] ..." names machines of
// each other process of the same pool, an argument a process
// (simpool.Pool.SetOutagePeers). It answers each on w.
func simCommands(r io.Reader, w io.Writer, p *simpool.Pool, logger *slog.Logger) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0:
		case f[0] == "kill" && len(f) == 2:
			if err := p.Kill(f[1]); err != nil {
				fmt.Fprintf(w, "error: %v\n", err)
				continue
			}
			logger.Warn("simulated machine killed", "machine", f[1])
			fmt.Fprintf(w, "killed %s\n", f[1])
		case f[0] == "stats" && len(f) == 1:
			st := p.Stats()
			fmt.Fprintf(w, "stats machines=%d killed=%d refuted=%d stopped=%d peer-misses=%d bare-rounds=%d\n",
				st.Machines, st.Killed, st.Refuted, st.StoppedByLease, st.PeerMisses, st.BareRounds)
		case f[0] == "outage-peers":
			peers, err := parseOutagePeers(f[1:])
			if err == nil {
				err = p.SetOutagePeers(peers)
			}
			if err != nil {
				fmt.Fprintf(w, "error: %v\n", err)
				continue
			}
			fmt.Fprintf(w, "outage-peers %d\n", len(peers))
		default:
			fmt.Fprintf(w, "error: unknown command %q (want: kill NAME, stats, or outage-peers NAME@ADDR[,NAME@ADDR...] ...)\n", sc.Text())
		}
	}
}

// raiseFileLimit raises the process's open-file limit to at least want,
// the hard limit too when it is lower and the process may; it returns the
// limit it got.
func raiseFileLimit(want uint64) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("sim: open-file limit: %w", err)
	}
	if lim.Cur >= want {
		return lim.Cur, nil
	}
	next := unix.Rlimit{Cur: want, Max: max(lim.Max, want)}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &next); err == nil {
		return want, nil
	}
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("sim: open-file limit: %w", err)
	}
	return lim.Cur, nil
}

// parseOutagePeers reads outage-peers' arguments, one a process, each
// NAME@HOST:PORT[,NAME@HOST:PORT...] (machines of that process).
func parseOutagePeers(args []string) ([][]simpool.OutagePeer, error) {
	procs := make([][]simpool.OutagePeer, 0, len(args))
	for _, arg := range args {
		var peers []simpool.OutagePeer
		for _, a := range strings.Split(arg, ",") {
			name, addr, ok := strings.Cut(a, "@")
			if _, _, err := net.SplitHostPort(addr); !ok || name == "" || err != nil {
				return nil, fmt.Errorf("outage-peers: %q is not NAME@HOST:PORT", a)
			}
			peers = append(peers, simpool.OutagePeer{Name: name, Addr: addr})
		}
		procs = append(procs, peers)
	}
	return procs, nil
}
