package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"golang.org/x/time/rate"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/blobstore"
	"github.com/netmgr/netmgr/server/lease"
	"github.com/netmgr/netmgr/server/mailer"
	"github.com/netmgr/netmgr/server/raftnode"
	"github.com/netmgr/netmgr/server/ui"
)

// Server is one netmgr server. Create it with New; stop it with Shutdown.
type Server struct {
	cfg    Config
	log    *slog.Logger
	fsm    *fsm.FSM
	node   *raftnode.Node
	raft   *raft.Raft
	gossip *gossip
	// metrics is this server's Prometheus registry and instruments.
	metrics *metrics
	// children and submits merge the CHILD events and the jobs of
	// concurrent requests into shared Raft entries.
	children entryMerger[fsm.ChildEvent]
	submits  entryMerger[fsm.Submit]

	httpLn  net.Listener
	httpSrv *http.Server
	hc      *http.Client // for forwarding and for talking to stubs and peers

	// ready is true while this server leads and its leader loop's Barrier
	// has applied everything earlier leaders committed; consistent reads
	// wait for it.
	ready atomic.Bool
	// leader holds the lease table and leadership check while this
	// server leads; nil otherwise.
	leader atomic.Pointer[leaderState]
	// news wakes the lease renewals held for a leader (lease_hold.go);
	// leaseHeld counts them; leaseRelease paces them once a leader is
	// known.
	news         *leaderNews
	leaseHeld    atomic.Int64
	leaseRelease *rate.Limiter
	// leaseStreams counts the lease streams open here, whether this
	// server leads or they wait for it to (http_lease_stream.go).
	leaseStreams atomic.Int64
	// relay passes the renewals this server's lease streams take to the
	// leader while it does not lead, and via is what the leader names in
	// RenewVia (lease_relay.go).
	relay *leaseRelay
	via   relayVia
	// book is what lease renewals need of the database, kept by the FSM
	// as it applies entries (lease.Book; its Observe is the FSM's machine
	// observer), so a renewal takes no FSM lock.
	book *lease.Book
	// groupLevel is the highest command type every server applies, as
	// the leader last read it (refreshGroupLevel); 1.0's (oldestLevel)
	// until it has.
	groupLevel atomic.Uint32
	// storeHealth records the Raft store's failed writes, and lag how far
	// this server's log is behind the leader's commits (watchLag): both
	// make the server unhealthy in netstatus -s and /metrics.
	storeHealth raftnode.Health
	lag         lagWatch

	ctx    context.Context // cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the server starts

	shutdownOnce sync.Once

	// initialDB is Config.DatabaseFile parsed, or nil.
	initialDB *fsm.Database
	// admission checks would-be servers before they join Raft
	// (raft_admit.go, server/membership).
	admission *raftnode.Admission
	// mailer sends the group's mail while this server leads (mail.go);
	// nil without a mail configuration.
	mailer *mailer.Mailer
	// hist is this server's history (history.go): every event and ended
	// attempt, in the data dir; nil for a server without a data dir.
	hist *historyFeed
	// blobs is this server's store of the files jobs move (blobs.go);
	// blobsTemp its temporary directory when it has no data dir.
	blobs     *blobstore.Store
	blobsTemp string
	// limits are the per-user limits on requests, streams and blob
	// bytes (limits.go).
	limits *userLimits
	// hub fans this server's events and leader changes out to every open
	// dashboard page (ui_feed.go).
	hub *ui.Hub
	// site is the site policy script, compiled once per load, and the
	// leader's record of its failures (site_policy.go).
	site siteState
}

// New starts a server: Raft, the gossip node, the HTTP API, bootstrap by
// gossip when configured, and the leadership monitor. It returns once all
// listeners are bound.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger.With("server", cfg.Name),
		fsm:          fsm.New(),
		book:         lease.NewBook(),
		news:         newLeaderNews(),
		leaseRelease: rate.NewLimiter(0, 0), // paced at first use (releaseHeld)
		relay:        newLeaseRelay(),
		hc:           &http.Client{Timeout: 70 * time.Second, Transport: newTransport(cfg.TLS)},

		admission: raftnode.NewAdmission(),
		hub:       ui.NewHub(cfg.Name),
		limits:    newUserLimits(cfg),
	}
	s.groupLevel.Store(uint32(oldestLevel))
	s.fsm.SetMachineObserver(s.book.Observe)
	s.metrics = newMetrics(s)
	if cfg.DatabaseFile != "" {
		db, err := readDatabaseFile(cfg.DatabaseFile)
		if err != nil {
			return nil, err
		}
		s.initialDB = &db
	}
	if cfg.Mail != nil {
		m, err := mailer.New(*cfg.Mail)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errConfig, err)
		}
		s.mailer = m
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.openBlobs(); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen http: %w", err)
	}
	s.httpLn = ln
	if cfg.TLS != nil {
		// Client certificates are optional at the handshake: users from
		// outside the pool come with a token instead (identify).
		ln = s.gateTLS(ln)
	}

	var seeded uint64 // the last history event the dashboard's hub holds
	if cfg.DataDir != "" {
		if s.hist, err = openHistory(cfg.DataDir, s.log); err != nil {
			ln.Close()
			return nil, err
		}
		s.fsm.SetRecorder(s.hist.record)
		seeded = s.seedHub()
		s.goFunc(s.hist.run) // ends when Shutdown closes its queue
	}
	if s.node, err = raftnode.Open(s.raftConfig()); err != nil {
		ln.Close()
		s.closeHistory()
		return nil, err
	}
	s.raft = s.node.Raft()
	s.raft.RegisterObserver(s.metrics.electionObserver())
	s.raft.RegisterObserver(s.uiLeaderObserver())
	s.raft.RegisterObserver(s.news.observer())

	meta := client.NodeMeta{
		Role:   client.RoleServer,
		HTTP:   ln.Addr().String(),
		Raft:   s.node.Addr(),
		Expect: cfg.BootstrapExpect,
		Level:  int(fsm.CommandLevel),
	}
	if s.gossip, err = newGossip(&s.cfg, meta); err != nil {
		_ = s.raft.Shutdown().Error()
		s.node.Close()
		s.closeHistory()
		ln.Close()
		return nil, err
	}

	// Frames of at most 16 KiB, HTTP/2's default, rather than Go's 1 MiB:
	// Go's client sizes the buffer it holds for a streamed request body
	// (a stub's lease stream, for its life) by the server's frame size, up
	// to 512 KiB, which at 10,000 simulated machines is 5 GiB.
	s.httpSrv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second,
		HTTP2: &http.HTTP2Config{MaxReadFrameSize: 16 << 10}, ConnState: s.metrics.countConn}
	s.goFunc(func() {
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	})
	s.goFunc(func() { s.gossip.join(cfg.Join, s.ctx.Done()) })
	if cfg.BootstrapExpect > 0 {
		s.goFunc(s.bootstrapLoop)
	}
	s.goFunc(s.monitorLeadership)
	s.goFunc(s.relayLeases)
	s.goFunc(s.sweepBlobs)
	s.goFunc(s.watchLag)
	s.goFunc(func() { s.feedHub(seeded) })
	if s.hist != nil {
		s.goFunc(s.sweepHistory)
		s.goFunc(s.fillHistory)
	}
	s.log.Info("server started", "http", s.HTTPAddr(), "raft", meta.Raft, "gossip", s.gossip.addr())
	return s, nil
}

// raftConfig is what raftnode.Open needs of the server's configuration:
// Raft on its stores, writes recorded in storeHealth, each connection
// the TLS transport refuses counted as a denied request, and the leader's
// own heartbeat pace in a small pool (raft_pace.go) unless the timeouts
// are tuned.
func (s *Server) raftConfig() raftnode.Config {
	cfg := raftnode.Config{
		Name:             s.cfg.Name,
		DataDir:          s.cfg.DataDir,
		InmemStore:       s.cfg.InmemStore,
		Addr:             s.cfg.RaftAddr,
		Transport:        s.cfg.RaftTransport,
		TLS:              s.cfg.TLS,
		Logger:           s.cfg.Logger,
		SnapshotInterval: s.cfg.SnapshotInterval,
		Tune:             s.cfg.TuneRaft,
		FSM:              s.fsm,
		Health:           &s.storeHealth,
		OnRefuse:         func() { s.metrics.denied(denyRogueServer) },
		RelaxedPace:      s.relaxedPace,
	}
	if s.cfg.TuneRaft != nil {
		// Tests that shorten Raft's timeouts (50 ms in process) keep the
		// heartbeats' whole margin: a stall of 30 ms under -race is common.
		cfg.RelaxedPace = nil
	}
	return cfg
}

// closeHistory stops the history writer and closes the file, for New's
// failures once Raft is down.
func (s *Server) closeHistory() {
	if s.hist == nil {
		return
	}
	close(s.hist.ch)
	s.wg.Wait()
	_ = s.hist.db.Close()
}

// goFunc runs fn in a goroutine that Shutdown waits for.
func (s *Server) goFunc(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// HTTPAddr is the host:port the API listens on.
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

// GossipAddr is the host:port the gossip node listens on.
func (s *Server) GossipAddr() string { return s.gossip.addr() }

// RaftAddr is the host:port Raft listens on (or the in-memory
// transport's address).
func (s *Server) RaftAddr() string { return s.node.Addr() }

// Name is the server's name.
func (s *Server) Name() string { return s.cfg.Name }

// IsLeader reports whether this server currently leads the group.
func (s *Server) IsLeader() bool { return s.raft.State() == raft.Leader }

// Shutdown stops the server: it leaves the gossip pool, stops the API and
// Raft, waits for every goroutine it started and closes the stores. It is
// safe to call more than once.
func (s *Server) Shutdown() error {
	var err error
	s.shutdownOnce.Do(func() {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if e := s.httpSrv.Shutdown(ctx); e != nil {
			_ = s.httpSrv.Close()
		}
		s.gossip.shutdown()
		if e := s.raft.Shutdown().Error(); e != nil {
			err = fmt.Errorf("shutdown raft: %w", e)
		}
		if s.hist != nil {
			close(s.hist.ch) // Raft has stopped applying: the writer drains and ends
		}
		s.wg.Wait()
		s.node.Close()
		if s.blobsTemp != "" {
			_ = os.RemoveAll(s.blobsTemp)
		}
		if s.hist != nil {
			if e := s.hist.db.Close(); e != nil && err == nil {
				err = fmt.Errorf("close history: %w", e)
			}
		}
	})
	return err
}

// Snapshot asks Raft to take a snapshot now and waits for it.
func (s *Server) Snapshot() error {
	if err := s.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// scheme is the scheme of this group's API URLs.
func (s *Server) scheme() string {
	if s.cfg.TLS != nil {
		return "https://"
	}
	return "http://"
}

// newTransport pools connections to the stubs and peers this server talks
// to; the default keeps only two idle connections per host, which makes a
// busy dispatcher open a new connection for most Starts. With TLS, the
// peers must hold server or stub certificates of the cluster's CA.
func newTransport(m *pki.Material) *http.Transport {
	if m != nil {
		t := client.NewTLSTransport(m, pki.RoleServer, pki.RoleStub)
		t.MaxIdleConns = 0
		return t
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	// No cap on idle connections in all: the default of 100 made a leader
	// with more stubs than that close and redial connections on every pass.
	t.MaxIdleConns = 0
	return t
}
