package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/internal/buildinfo"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/stub"
)

// Names of the dev agent's server and stub.
const (
	devServerName = "dev-server"
	devStubName   = "dev-stub"
)

// devReadyTimeout bounds how long the dev agent waits for its server to
// lead and its stub to register.
const devReadyTimeout = 30 * time.Second

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "run a whole cluster in one process (--dev)",
		UsageText: "netmgr agent --dev [--exec-dir DIR] [--exec-retention D] [--log-level LEVEL]\n" +
			"    [--log-format text|json]",
		Description: "With --dev, runs a one-server group and one stub (machine " + devStubName + ") in this\n" +
			"process, on 127.0.0.1 with free ports and its data in a temporary directory that\n" +
			"is removed on exit. It is secure as a real cluster is: a throw-away CA and\n" +
			"certificates, an https API, encrypted gossip, and the stub's socket through\n" +
			"which this machine's users act as themselves. Its database allows root jobs.\n" +
			"Once the cluster can take jobs it prints the lines that point the other\n" +
			"commands at it, then runs until SIGINT or SIGTERM:\n\n" +
			"   $ netmgr agent --dev\n" +
			"   export NETMGR_ADDR=https://127.0.0.1:40123\n" +
			"   export NETMGR_SOCKET=/tmp/netmgr-dev-123/stub.sock\n" +
			"   export NETMGR_CACERT=/tmp/netmgr-dev-123/tls/ca.pem\n\n" +
			"Run those lines in another shell, then the commands there, as any local user:\n\n" +
			"   $ netexec --wait done /bin/echo hello\n\n" +
			"The job's output is on this machine in EXEC_DIR/CLUSTER/JOB.INSTANCE.ATTEMPT/stdout\n" +
			"(and stderr), CLUSTER naming the throw-away CA, so two dev clusters sharing\n" +
			"--exec-dir never mix their jobs' output (netmgr stub --help says more). The\n" +
			"stub removes each --exec-retention after the attempt ends; those left when the\n" +
			"agent stops stay.\n\n" +
			"Only --dev exists today.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dev", Usage: "run a throw-away one-machine cluster for trying netmgr out"},
			&cli.StringFlag{Name: "exec-dir", Usage: "`DIR` the dev stub runs jobs in (default " + stub.DefaultExecDir + ")"},
			&cli.DurationFlag{Name: "exec-retention", Value: stub.DefaultExecRetention,
				Usage: "keep an ended attempt's directory for `DURATION` after its end is committed, then remove it"},
			&cli.IntFlag{Name: "max-copy-size", Value: int(files.DefaultMaxSize >> 20), Usage: "the most a job's copy_in files, and one attempt's copy_out, may take, in `MiB`"},
			logLevelFlag(), logFormatFlag(),
		},
		Action: runAgent,
	}
}

func runAgent(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q", cCtx.Args().First())
	}
	if !cCtx.Bool("dev") {
		return usagef("only --dev exists today: netmgr agent --dev runs a one-machine cluster in this process")
	}
	logger, err := newLogger(cCtx, cCtx.App.ErrWriter)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "netmgr-dev-")
	if err != nil {
		return fmt.Errorf("make data dir: %w", err)
	}
	defer os.RemoveAll(dir)
	// Other local users reach the stub's socket and the CA in here.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("open data dir to local users: %w", err)
	}
	sec, err := makeDevSecurity(dir)
	if err != nil {
		return err
	}

	srv, st, err := startDevCluster(cCtx, dir, sec, logger)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Shutdown(); err != nil {
			logger.Error("shut down stub", "err", err)
		}
		if err := srv.Shutdown(); err != nil {
			logger.Error("shut down server", "err", err)
		}
	}()

	if err := waitDevReady(cCtx.Context, sec.socket); err != nil {
		if cCtx.Context.Err() != nil {
			return nil // interrupted while starting
		}
		return err
	}
	fmt.Fprintf(cCtx.App.Writer, "export %s=https://%s\nexport %s=%s\nexport %s=%s\n",
		envAddr, srv.HTTPAddr(), envSocket, sec.socket, envCACert, sec.ca)
	<-cCtx.Context.Done()
	logger.Info("shutting down the dev agent")
	return nil
}

// waitDevReady polls the server through the stub's socket until it has a
// leader and the dev stub is up, or devReadyTimeout passes.
func waitDevReady(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, devReadyTimeout)
	defer cancel()
	c, err := client.New(nil, client.WithUnixSocket(socket), client.WithRetryFor(time.Second))
	if err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ms, err := c.Machines(ctx)
		if err == nil {
			last = fmt.Errorf("machine %s is not up yet", devStubName)
			for _, m := range ms {
				if m.Name == devStubName && m.State == client.MachineUp {
					return nil
				}
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dev cluster not ready after %v: %w", devReadyTimeout, last)
		case <-tick.C:
		}
	}
}

// devPortTries is how many times the dev agent picks its ports afresh
// when another process bound one between its look and its bind.
const devPortTries = 5

// startDevCluster starts the dev agent's server and stub in dir. Raft's
// and gossip's ports are picked free first (they must be known before
// binding, to join), so another process may take one meanwhile: a start
// that finds its port taken is undone and tried again on new ports.
func startDevCluster(cCtx *cli.Context, dir string, sec devSecurity, logger *slog.Logger) (*server.Server, *stub.Stub, error) {
	for try := 1; ; try++ {
		srv, st, err := startDevClusterOn(cCtx, dir, sec, logger)
		if err == nil || try == devPortTries || !portTaken(err) {
			return srv, st, err
		}
		logger.Info("a port picked for the dev agent was taken meanwhile; picking again", "err", err)
	}
}

// portTaken reports whether err is a bind to a port in use (Raft's and
// memberlist's transports keep only the message).
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// startDevClusterOn is one try of startDevCluster, on fresh ports and
// fresh data dirs.
func startDevClusterOn(cCtx *cli.Context, dir string, sec devSecurity, logger *slog.Logger) (*server.Server, *stub.Stub, error) {
	for _, d := range []string{"server", "stub"} {
		if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
			return nil, nil, fmt.Errorf("clear data dir: %w", err)
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, nil, fmt.Errorf("pick ports: %w", err)
	}
	local := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	srv, err := server.New(server.Config{
		Name:             devServerName,
		DataDir:          filepath.Join(dir, "server"),
		HTTPAddr:         "127.0.0.1:0",
		RaftAddr:         local(ports[0]),
		GossipAddr:       local(ports[1]),
		BootstrapExpect:  1,
		OutageGrace:      server.DefaultOutageGrace,
		JobRetention:     server.DefaultJobRetention,
		HistoryRetention: server.DefaultHistoryRetention,
		MaxCopySize:      max(int64(cCtx.Int("max-copy-size")), 1) << 20,
		Logger:           logger,
		Version:          buildinfo.Get(version, commit).Short(),
		DatabaseFile:     sec.database,
		TLS:              sec.server,
		GossipKeyring:    sec.keyring,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start server: %w", err)
	}
	st, err := stub.New(stub.Config{
		Name:       devStubName,
		DataDir:    filepath.Join(dir, "stub"),
		HTTPAddr:   "127.0.0.1:0",
		GossipAddr: local(ports[2]),
		Join:       []string{local(ports[1])},
		Servers:    []string{srv.HTTPAddr()},
		ExecDir:    cCtx.String("exec-dir"),
		Logger:     logger,

		ExecRetention: cCtx.Duration("exec-retention"),

		TLS:           sec.stub,
		GossipKeyring: sec.keyring,
		Socket:        sec.socket,
	})
	if err != nil {
		if serr := srv.Shutdown(); serr != nil {
			logger.Error("shut down server", "err", serr)
		}
		return nil, nil, fmt.Errorf("start stub: %w", err)
	}
	return srv, st, nil
}

// freePorts returns n distinct ports on 127.0.0.1 that were free for both
// TCP and UDP (gossip uses both) when it looked.
func freePorts(n int) ([]int, error) {
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 50*n {
			return nil, fmt.Errorf("no free port pair found after %d tries", tries)
		}
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		closers = append(closers, tl.Close)
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // UDP side taken; try another
		}
		closers = append(closers, ul.Close)
		ports = append(ports, port)
	}
	return ports, nil
}
