package stub

import (
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// metricsPrefix starts the name of every metric a stub exports.
const metricsPrefix = "netmgr_stub_"

// latencyBuckets bound the stub's latency histograms, in seconds.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// metrics is one stub's Prometheus instrumentation (internal/promtext,
// which says why not client_golang), on a registry of its own (tests
// run several stubs in one process). The counters and
// histograms are fed by hooks in the API and the sender; the gauges read
// the outbox, the runner, the lease and the gossip node when /metrics is
// scraped. Safe for concurrent use.
type metrics struct {
	reg *promtext.Registry

	delivered       *promtext.Counter
	deliverySeconds *promtext.Histogram
	startSeconds    *promtext.Histogram
	denied          *promtext.CounterVec // by reason
	logStreams      atomic.Int64         // GET /v1/logs answers being sent
}

// newMetrics registers s's metrics. The gauges read s.out, s.runner,
// s.lease, s.health and s.gossip lazily, so they may be set after this call but
// must be before the first scrape; the gossip gauges exist only when
// gossip is configured.
func newMetrics(s *Stub) *metrics {
	m := &metrics{
		reg: promtext.NewRegistry(),
		delivered: promtext.NewCounter(metricsPrefix+"events_delivered_total",
			"CHILD events a server answered (accepted, stale or rejected), so removed from the outbox."),
		deliverySeconds: promtext.NewHistogram(metricsPrefix+"event_delivery_seconds",
			"Time from a CHILD event being recorded in the outbox to a server answering it "+
				"(events recorded by an earlier stub process are not timed).",
			latencyBuckets),
		denied: promtext.NewCounterVec("netmgr_requests_denied_total",
			"Requests refused, by reason: a certificate whose role may not make them, or a caller of the user socket the stub cannot name.", []string{"reason"}),
		startSeconds: promtext.NewHistogram(metricsPrefix+"start_seconds",
			"Time from receiving a Start to the attempt being durable in the outbox: "+
				"its record, whose CHILD_REGISTER the answer carries, or the CHILD_TERM of a binary that could not run.",
			latencyBuckets),
	}
	gauge := func(name, help string, read func() float64) *promtext.ValueFunc {
		return promtext.NewGaugeFunc(metricsPrefix+name, help, read)
	}
	m.reg.MustRegister(
		promtext.GoCollector(),
		promtext.ProcessCollector(),
		m.delivered, m.deliverySeconds, m.startSeconds, m.denied,
		gauge("event_backlog", "CHILD events in the outbox that no server has answered yet (NaN if the outbox cannot be read).",
			func() float64 {
				n, err := s.out.Backlog()
				if err != nil {
					return math.NaN()
				}
				return float64(n)
			}),
		gauge("running_attempts", "Attempts whose supervisor runs and whose end is not recorded yet.",
			func() float64 { return float64(len(s.runner.runningAttempts())) }),
		gauge("lease_remaining_seconds", "Time until the stub's lease runs out unless renewed; negative once it has.",
			func() float64 { return (time.Duration(s.lease.deadline.Load()) - supervisor.BootNow()).Seconds() }),
		gauge("healthy", "1 while the machine takes new work as far as its stub knows; 0 while the stub drains it (a full or failing exec or data dir, a failing health check).",
			func() float64 {
				if s.health.problem() == "" {
					return 1
				}
				return 0
			}),
		gauge("exec_dir_free_bytes", "Bytes free to jobs in the exec dir's file system at the last look (every few seconds).",
			func() float64 { execFree, _ := s.health.free(); return float64(execFree) }),
		gauge("exec_dir_used_bytes", "Bytes the files in the exec dir take (as du counts them): the kept directories of ended attempts and those of running ones, measured every min(exec retention/4, 1m).",
			func() float64 { return float64(s.execs.used.Load()) }),
		gauge("exec_dirs_kept", "Exec dirs of attempts this stub made and has not removed yet, running or kept for the exec retention after their end.",
			func() float64 { return float64(s.execs.kept.Load()) }),
		gauge("log_streams", "Answers of GET /v1/logs (netmgr logs, through a server) being sent now, followed ones among them.",
			func() float64 { return float64(m.logStreams.Load()) }),
		gauge("data_dir_free_bytes", "Bytes free in the data dir's file system at the last look (every few seconds).",
			func() float64 { _, dataFree := s.health.free(); return float64(dataFree) }),
	)
	if s.cfg.GossipAddr != "" {
		m.reg.MustRegister(
			gauge("gossip_health_score", "Memberlist's awareness score: 0 is healthy, higher means this node is slow to answer probes.",
				func() float64 { return float64(s.gossip.ml.HealthScore()) }),
			gauge("gossip_members", "Live members of the gossip pool, servers and stubs, this node included.",
				func() float64 { return float64(s.gossip.ml.NumMembers()) }),
			gauge("gossip_servers", "Servers alive in this stub's view of the gossip pool. At 0 the stub joins its --join "+
				"addresses and every server it has seen again, every few seconds, until one answers.",
				func() float64 { return float64(s.gossip.liveServers()) }),
		)
	}
	return m
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return m.reg.Handler()
}

// startAnswered records the outcome of a Start received at received: only
// a Start that recorded an attempt now is timed.
func (m *metrics) startAnswered(received time.Time, started bool, err error) {
	if started && err == nil {
		m.startSeconds.Observe(time.Since(received).Seconds())
	}
}

// answered records that a server answered the outbox event seq.
func (m *metrics) answered(out *outbox.Outbox, seq uint64) {
	m.delivered.Inc()
	if at, ok := out.TakeRecordedAt(seq); ok {
		m.deliverySeconds.Observe(time.Since(at).Seconds())
	}
}
