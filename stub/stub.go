package stub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/owner"
	"github.com/netmgr/netmgr/stub/supervisor"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrNoDataDir means Config.DataDir was empty.
	ErrNoDataDir = errors.New("stub needs a data directory")
	// ErrShuttingDown means the stub is shutting down and starts nothing.
	ErrShuttingDown = errors.New("stub is shutting down")
	// ErrUnknownAttempt means a Signal named an attempt this stub does not
	// supervise.
	ErrUnknownAttempt = errors.New("unknown attempt")
	// ErrUnknownSignal means a Signal named no signal this stub knows.
	ErrUnknownSignal = errors.New("unknown signal")
	// ErrUnknownOwner means a Start's owner is no user of this machine.
	ErrUnknownOwner = errors.New("owner is no user of this machine")
	// ErrLeaseExpired means the stub's lease has run out, so it starts no
	// restartable attempt: the servers may have started it elsewhere.
	ErrLeaseExpired = errors.New("lease expired: restartable work may run elsewhere")
)

// httpShutdownTimeout bounds how long Shutdown waits for API requests in
// flight.
const httpShutdownTimeout = 2 * time.Second

// Stub is the per-machine agent. It is safe for concurrent use; New starts
// it and Shutdown stops it.
type Stub struct {
	cfg      Config
	log      *slog.Logger
	httpAddr string // advertised host:port of the API

	ln      net.Listener
	srv     *http.Server
	out     *outbox.Outbox
	servers *serverList
	runner  *runner
	lease   *leaseKeeper
	peers   *peerList
	outage  *outage
	health  *healthWatch
	owner   *owner.Watch // nil without an owner policy
	gossip  *gossip      // nil when gossip is disabled
	socket  *userSocket  // nil without Config.Socket
	facts   *factSource
	metrics *metrics
	// execs removes ended attempts' exec dirs and measures the exec dir.
	execs *execSweeper
	// logsDone ends the log streams (http_logs.go) when the API shuts
	// down, which would otherwise wait for followed ones.
	logsDone context.Context

	ctx    context.Context // canceled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // the HTTP server, sender and gossip goroutines

	shutdownOnce sync.Once
	shutdownErr  error
}

// New starts a stub: it opens the outbox, listens for the API, joins the
// gossip pool in the background and starts delivering events. It returns
// once the API listens.
func New(cfg Config) (*Stub, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("make data dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.ExecDir, cfg.clusterID()), 0o755); err != nil {
		return nil, fmt.Errorf("make exec dir: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Stub{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, facts: newFactSource()}
	if d := closedToOthers(filepath.Join(cfg.ExecDir, cfg.clusterID())); d != "" && os.Geteuid() == 0 {
		s.log.Warn("other users' jobs cannot reach the exec dir and will fail to start (fork/exec: permission denied)",
			"closed", d, "exec_dir", cfg.ExecDir, "fix", "chmod o+x "+d+", or choose another --exec-dir")
	}
	if cfg.InitFile != "" {
		if s.facts.init, err = readInit(cfg.InitFile); err != nil {
			cancel()
			return nil, err
		}
	}
	ok := false
	defer func() {
		if !ok {
			s.abort()
		}
	}()

	if s.out, err = outbox.Open(filepath.Join(cfg.DataDir, "outbox.db"), filepath.Join(cfg.DataDir, attemptsDir)); err != nil {
		return nil, err
	}
	known, err := s.out.KnownAttempts()
	if err != nil {
		return nil, err
	}
	if s.servers, err = newServerList(cfg.Servers, cfg.TLS, cfg.LeaseWarmEvery); err != nil {
		return nil, err
	}
	cgroups, why := detectCgroups(cfg.CgroupParent, cfg.DataDir)
	if cgroups != "" {
		s.log.Info("each job runs in its own cgroup", "under", cgroups)
	} else {
		s.log.Info("jobs run in process groups, not cgroups", "why", why)
	}
	s.facts.execDir = cfg.ExecDir
	plan := enforcement(cfg.CgroupParent, cgroups, why, cfg.DataDir)
	s.facts.unenforced, s.facts.gpusFenced = plan.unenforced, plan.gpusFenced
	for _, e := range plan.enforced {
		s.log.Info("enforced on this machine", "what", e)
	}
	for _, u := range plan.unenforced {
		s.log.Info("not enforced on this machine", "what", u)
	}
	for _, w := range plan.v1Why {
		s.log.Info("no cgroup v1 hierarchy used", "why", w)
	}
	if cfg.Simulate == nil {
		gpus, err := detectGPUs(ctx)
		if err != nil {
			s.log.Warn("no GPUs counted", "err", err)
		}
		s.facts.gpus = gpus
		if len(gpus) > 0 {
			s.log.Info("GPUs found with nvidia-smi", "count", len(gpus), "first", gpus[0].Type)
		}
	}
	s.health = newHealthWatch(cfg, s.log)
	s.log.Info("watching the machine's health", s.health.describe()...)
	s.runner = newRunner(cfg.Name, cfg.ExecDir, cfg.clusterID(), cfg.DataDir, cgroups, cfg.Simulate, s.out, s.health, s.log)
	s.runner.servers = s.servers
	s.runner.hasGPUs = len(s.facts.gpus) > 0 || s.facts.init != nil && hasGPUs(s.facts.init.Attrs)
	s.runner.enforce = plan
	if cfg.Prologue != "" || cfg.Epilogue != "" {
		s.runner.scripts = &siteScripts{prologue: cfg.Prologue, epilogue: cfg.Epilogue, timeout: cfg.ScriptTimeout, log: s.log}
		s.log.Info("site scripts", "prologue", cfg.Prologue, "epilogue", cfg.Epilogue, "timeout", cmpOr(cfg.ScriptTimeout, DefaultScriptTimeout))
	}
	s.simulate(cfg.Simulate)
	if err := s.runner.recover(known); err != nil {
		return nil, err
	}

	s.execs = newExecSweeper(s.runner, cfg.ExecRetention)
	s.lease = newLeaseKeeper(cfg.Name, cfg.DataDir, s.runner, s.servers, s.facts, s.log)
	// Before anything renews or joins: the file may hold the restart lease
	// of the stub before this one, which the servers stop counting once
	// this one is back (stub/lease_restart.go).
	if _, err := supervisor.LowerLease(cfg.DataDir, time.Duration(s.lease.deadline.Load())); err != nil {
		return nil, fmt.Errorf("start stub: %w", err)
	}
	s.peers = newPeerList(cfg.TLS)
	s.outage = newOutage(cfg.Name, s.lease, s.peers, s.log)
	s.lease.outage = s.outage
	s.lease.health = s.health
	if cfg.Simulate == nil { // simulated jobs are no processes
		s.lease.ownLoad = owner.SmoothLoad(owner.GroupsLoad(s.runner.jobGroups))
	}
	// The owner policy runs on every stub: the database or the init file
	// may turn it on when no flag does (ownersettings.go).
	settings := &ownerSettings{log: s.log, flags: cfg.Owner, flagVacate: cfg.VacateAfter, flagKeep: cfg.KeepSuspended}
	if settings.flagVacate <= 0 {
		settings.flagVacate = DefaultVacateAfter
	}
	if s.facts.init != nil {
		settings.init = s.facts.init.Owner
	}
	start := settings.current()
	if start.cfg.OwnLoad == nil {
		start.cfg.OwnLoad = owner.SmoothLoad(owner.GroupsLoad(s.runner.jobGroups))
	}
	settings.flags.OwnLoad = start.cfg.OwnLoad
	if s.owner, err = owner.New(start.cfg, s.log); err != nil {
		return nil, fmt.Errorf("owner policy: %w", err)
	}
	if start.cfg.Enabled() {
		s.log.Info("owner policy", s.owner.Describe()...)
	}
	s.lease.owner = s.owner
	settings.watch = s.owner
	settings.policy = newOwnerPolicy(s.owner, s.runner, cfg.DataDir, start.vacateAfter, start.keepSuspended, s.log)
	s.lease.ownerSettings = settings

	if s.ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	s.httpAddr = s.ln.Addr().String()
	if cfg.TLS != nil {
		// Every caller of a stub holds a certificate of the cluster: the
		// servers, the other stubs, an admin's client certificate.
		s.ln = tls.NewListener(s.ln, cfg.TLS.ServerConfig(true))
	}
	s.metrics = newMetrics(s)
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	var endLogs context.CancelFunc
	s.logsDone, endLogs = context.WithCancel(context.Background())
	s.srv.RegisterOnShutdown(endLogs)

	if cfg.GossipAddr != "" {
		if s.gossip, err = startGossip(cfg, s.httpAddr, s.servers, s.peers, s.facts, &s.lease.loadByLease); err != nil {
			return nil, err
		}
		s.httpAddr = s.gossip.httpAddr()
		s.execs.report = s.gossip.setExecUsed
	}

	if cfg.Socket != "" {
		if s.socket, err = openUserSocket(cfg.Socket, newRelay(cfg.Name, s.servers, cfg.TLS, s.log, s.metrics.denied), s.log); err != nil {
			return nil, err
		}
	}

	s.wg.Go(func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("stub API stopped", "err", err)
		}
	})
	snd := &sender{out: s.out, servers: s.servers, log: s.log, metrics: s.metrics}
	s.wg.Go(func() { snd.run(ctx) })
	s.lease.factsOf = s.currentFacts
	s.wg.Go(func() { s.lease.run(ctx) })
	s.wg.Go(func() { s.outage.run(ctx) })
	s.wg.Go(func() { s.outage.witness.run(ctx) })
	s.wg.Go(func() { s.health.run(ctx) })
	s.wg.Go(func() { s.execs.run(ctx) })
	s.wg.Go(func() { s.health.runChecks(ctx) })
	s.wg.Go(func() { s.owner.Run(ctx) })
	s.wg.Go(func() { settings.policy.run(ctx) })
	if s.gossip != nil {
		s.wg.Go(func() { s.gossip.run(ctx, cfg.Join) })
	}
	ok = true
	s.log.Info("stub started", "name", cfg.Name, "http", s.httpAddr, "gossip", cfg.GossipAddr, "socket", cfg.Socket)
	return s, nil
}

// HTTPAddr returns the host:port the stub's API is reachable at: the
// listen address, with the gossip advertise address in place of an
// unspecified host.
func (s *Stub) HTTPAddr() string { return s.httpAddr }

// Shutdown leaves the gossip pool, stops the API, the event sender and
// the goroutines watching the supervisors, and closes the outbox. Running
// jobs and their supervisors are left alone: a new stub on the same
// DataDir reattaches to them and reports their ends. Shutdown waits for
// the stub's goroutines (but for the one reaping each supervisor this
// process started, which ends with the supervisor); calling it again
// returns the first result.
func (s *Stub) Shutdown() error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.stop(false) })
	return s.shutdownErr
}

// Restart stops the stub to start again (an upgrade, systemctl restart):
// as Shutdown, but it first asks the leader for a restart lease, so the
// machine shows restarting, its running instances stay running and its
// restartable jobs are not stopped at the plain lease. A new stub on the
// same DataDir within the servers' restart grace (server.Config.
// RestartGrace) takes them over; past it, the servers declare the lease
// expired as for a lost machine. A leader that grants no restart lease
// (an older group, a grace of 0) gets a plain Shutdown. Calling it or
// Shutdown again returns the first result.
func (s *Stub) Restart() error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.stop(true) })
	return s.shutdownErr
}

func (s *Stub) stop(restart bool) error {
	var errs []error
	if restart && s.gossip != nil {
		s.lease.restartLease(s.ctx)
	}
	if s.gossip != nil {
		errs = append(errs, s.gossip.leave())
	}
	// Shutdown waits for connections that never carried a request as if
	// they were busy, so after the grace the rest are closed.
	ctx, cancelHTTP := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancelHTTP()
	sockErr := make(chan error, 1)
	go func() {
		if s.socket == nil {
			sockErr <- nil
			return
		}
		sockErr <- s.socket.close(ctx)
	}()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.log.Debug("stub API did not drain; closing it", "err", err)
		if err := s.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("stop stub API: %w", err))
		}
	}
	errs = append(errs, <-sockErr)
	s.runner.close()
	s.cancel()
	s.wg.Wait()
	s.runner.wait()
	if s.runner.cgroups != "" {
		_ = os.Remove(s.runner.cgroups) // only if no job's cgroup is left in it
	}
	errs = append(errs, s.out.Close())
	s.log.Info("stub stopped", "name", s.cfg.Name)
	return errors.Join(errs...)
}

// abort undoes a New that failed half way.
func (s *Stub) abort() {
	s.cancel()
	if s.gossip != nil {
		_ = s.gossip.ml.Shutdown()
	}
	if s.ln != nil {
		_ = s.ln.Close()
	}
	if s.socket != nil {
		_ = s.socket.close(context.Background())
	}
	if s.runner != nil {
		s.runner.close()
		s.runner.wait()
	}
	if s.out != nil {
		_ = s.out.Close()
	}
}
