package server

import (
	"net/http"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// metricsPrefix starts the name of every metric a server exports.
const metricsPrefix = "netmgr_server_"

// Histogram buckets, in seconds or instances.
var (
	commitBuckets   = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	passBuckets     = []float64{.00001, .0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	placedBuckets   = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
	dispatchBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
)

// metrics is one server's Prometheus instrumentation, on a registry of its
// own (tests run several servers in one process). The event counters and
// histograms are fed by one-line hooks in the code they time; the gauges
// read Raft, the database and the gossip pool when /metrics is scraped.
// Safe for concurrent use.
type metrics struct {
	reg *prometheus.Registry

	commitSeconds   *prometheus.HistogramVec // by command
	elections       prometheus.Counter
	passSeconds     prometheus.Histogram
	passPlaced      prometheus.Histogram
	dispatchSeconds prometheus.Histogram
	startsFailed    prometheus.Counter
	signalsSent     prometheus.Counter
	leasesExpired   prometheus.Counter
	stubJoins       *prometheus.CounterVec // by where the facts came from
	requests        *prometheus.CounterVec // by route
	deniedRequests  *prometheus.CounterVec // by reason
	startRequests   prometheus.Counter
	mailsSent       prometheus.Counter
	mailFailures    prometheus.Counter
}

// newMetrics registers s's metrics. The gauges read s.raft, s.fsm and
// s.gossip lazily, so they may be set after this call but must be before
// the first scrape.
func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		commitSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricsPrefix + "raft_commit_seconds",
			Help:    "Time from proposing a command to Raft on the leader to its being committed and applied here, by command.",
			Buckets: commitBuckets,
		}, []string{"command"}),
		elections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "raft_elections_total",
			Help: "Leaders this server has seen elected (each change to a new known leader).",
		}),
		passSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricsPrefix + "scheduler_pass_seconds",
			Help:    "Duration of one scheduling pass on the leader, planning and the Place commit; _count is the number of passes.",
			Buckets: passBuckets,
		}),
		passPlaced: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricsPrefix + "scheduler_pass_placed_instances",
			Help:    "Instances one scheduling pass placed (accepted by the Place commit); _sum is the total placed.",
			Buckets: placedBuckets,
		}),
		dispatchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricsPrefix + "dispatch_start_latency_seconds",
			Help:    "Time from the leader stamping a placement (just before its Place commit) to the stub acknowledging the Start and the CHILD_REGISTER it answered with being committed, retries included.",
			Buckets: dispatchBuckets,
		}),
		startsFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "dispatch_starts_failed_total",
			Help: "Starts sent to a stub that failed and will be retried.",
		}),
		signalsSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "dispatch_signals_sent_total",
			Help: "Signals (kill, restart, suspend, resume) a stub acknowledged.",
		}),
		leasesExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "leases_expired_total",
			Help: "Machine leases this server, as leader, declared expired.",
		}),
		stubJoins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "stub_joins_total",
			Help: "Machines this server, as leader, joined to the pool (StubJoin committed), by where their facts came from: \"renewal\" (sent with the stub's lease renewal) or \"fetched\" (GET /v1/facts on the stub, a connection of the leader's own).",
		}, []string{"facts"}),
		deniedRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "netmgr_requests_denied_total",
			Help: "Requests refused because they proved no identity or the identity may not do what they asked, by reason.",
		}, []string{"reason"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "http_requests_total",
			Help: "API requests this server answered, by route (method and pattern; \"unmatched\" for none).",
		}, []string{"route"}),
		startRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "dispatch_start_requests_total",
			Help: "Requests carrying Starts (POST /v1/starts) this server, as leader, sent to stubs.",
		}),
		mailsSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "mail_sent_total",
			Help: "Mail this server, as leader, handed to the relay or sendmail.",
		}),
		mailFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "mail_send_failures_total",
			Help: "Attempts of this server, as leader, to send mail that failed (each is retried with backoff, or given up after 12).",
		}),
	}
	gauge := func(name, help string, read func() float64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricsPrefix + name, Help: help}, read)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.commitSeconds, m.elections, m.passSeconds, m.passPlaced,
		m.dispatchSeconds, m.startsFailed, m.signalsSent, m.leasesExpired, m.stubJoins,
		m.requests, m.deniedRequests, m.startRequests, m.mailsSent, m.mailFailures,
		gauge("mail_pending", "Mail the group has filed and not yet recorded sent or given up.",
			func() float64 {
				var n int
				s.fsm.Read(func(v fsm.View) { n = v.PendingMailCount() })
				return float64(n)
			}),
		gauge("raft_applied_index", "Index of the last Raft log entry handed to the database.",
			func() float64 { return float64(s.raft.AppliedIndex()) }),
		gauge("raft_commit_index", "Index of the last Raft log entry known committed.",
			func() float64 { return float64(s.raft.CommitIndex()) }),
		gauge("raft_last_log_index", "Index of the last entry in this server's Raft log or snapshot.",
			func() float64 { return float64(s.raft.LastIndex()) }),
		gauge("raft_term", "Current Raft term.",
			func() float64 { return float64(s.raft.CurrentTerm()) }),
		gauge("raft_is_leader", "1 while this server leads the Raft group, else 0.",
			func() float64 { return boolFloat(s.raft.State() == raft.Leader) }),
		gauge("gossip_health_score", "Memberlist's awareness score: 0 is healthy, higher means this node is slow to answer probes.",
			func() float64 { return float64(s.gossip.ml.GetHealthScore()) }),
		gauge("gossip_members", "Live members of the gossip pool, servers and stubs, this node included.",
			func() float64 { return float64(s.gossip.ml.NumMembers()) }),
		gauge("raft_behind_entries", "Entries the leader had committed that this server's log lacked a second later (0 on the leader and on a follower keeping up).",
			func() float64 { return float64(s.lag.behind.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: metricsPrefix + "raft_log_write_errors_total",
			Help: "Writes to the Raft log and stable store (raft.db) that failed: disk full, I/O errors.",
		}, func() float64 { return float64(s.storeHealth.failures.Load()) }),
		&queueCollector{fsm: s.fsm},
		&machineCollector{s: s},
		&healthCollector{s: s},
	)
	return m
}

// countRequests counts the requests h answers by the route the mux
// matched, which it sets on the request.
func (m *metrics) countRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route).Inc()
	})
}

// denied counts a refused request.
func (m *metrics) denied(reason string) { m.deniedRequests.WithLabelValues(reason).Inc() }

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// electionObserver counts the leaders Raft reports. Its filter counts and
// drops every observation, so Raft never sends on a channel and no
// goroutine is needed; Raft calls it on its own goroutine, and a counter
// increment does not block.
func (m *metrics) electionObserver() *raft.Observer {
	return raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if lo, ok := o.Data.(raft.LeaderObservation); ok && lo.LeaderID != "" {
			m.elections.Inc()
		}
		return false
	})
}

// committed records the commit time of a command proposed at start.
func (m *metrics) committed(t fsm.MessageType, start time.Time) {
	m.commitSeconds.WithLabelValues(t.String()).Observe(time.Since(start).Seconds())
}

// schedulePass records one scheduling pass begun at start that placed
// placed instances.
func (m *metrics) schedulePass(start time.Time, placed int) {
	m.passSeconds.Observe(time.Since(start).Seconds())
	m.passPlaced.Observe(float64(placed))
}

// started records a stub's answer to the Start of an attempt placed at
// placedAt, and returns err.
func (m *metrics) started(placedAt time.Time, err error) error {
	switch {
	case err != nil:
		m.startsFailed.Inc()
	case !placedAt.IsZero():
		m.dispatchSeconds.Observe(time.Since(placedAt).Seconds())
	}
	return err
}

// signalled records a stub's answer to a Signal, and returns err.
func (m *metrics) signalled(err error) error {
	if err == nil {
		m.signalsSent.Inc()
	}
	return err
}

// leaseExpired counts one lease declared expired.
func (m *metrics) leaseExpired() { m.leasesExpired.Inc() }

// mailSent and mailFailed count the outcomes of sending mail.
func (m *metrics) mailSent()   { m.mailsSent.Inc() }
func (m *metrics) mailFailed() { m.mailFailures.Inc() }

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// queueCollector reports what each queue holds, read from this server's
// copy of the database (under its read lock) at scrape time.
type queueCollector struct{ fsm *fsm.FSM }

var (
	queueQueuedDesc = prometheus.NewDesc(metricsPrefix+"queue_queued_instances",
		"Instances waiting in the queue for a machine.", []string{"queue"}, nil)
	queueActiveDesc = prometheus.NewDesc(metricsPrefix+"queue_active_instances",
		"Instances of the queue's jobs holding a slot: placed, running or suspended.", []string{"queue"}, nil)
	queuedDesc = prometheus.NewDesc(metricsPrefix+"queued_instances",
		"Instances waiting for a machine, all queues.", nil, nil)
	activeDesc = prometheus.NewDesc(metricsPrefix+"active_instances",
		"Instances holding a slot (placed, running or suspended), all queues.", nil, nil)
)

// Describe sends the descriptors of the queue metrics.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueQueuedDesc, queueActiveDesc, queuedDesc, activeDesc} {
		ch <- d
	}
}

// Collect reads the queues under the database's read lock and sends their
// depths; it sends after the lock is released.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	var qs []fsm.QueueView
	c.fsm.Read(func(v fsm.View) { qs = v.Queues() })
	queued, active := 0, 0
	for _, q := range qs {
		ch <- prometheus.MustNewConstMetric(queueQueuedDesc, prometheus.GaugeValue, float64(q.Waiting), q.Name)
		ch <- prometheus.MustNewConstMetric(queueActiveDesc, prometheus.GaugeValue, float64(q.Active), q.Name)
		queued += q.Waiting
		active += q.Active
	}
	ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(queued))
	ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(active))
}

// machineStates are the states netstatus -m shows, each reported even when
// no machine is in it.
var machineStates = []string{client.MachineUp, client.MachineSuspect, client.MachineDraining,
	client.MachineAsleep, client.MachineRestarting, client.MachineUnreachable, client.MachineDown}

var machinesDesc = prometheus.NewDesc(metricsPrefix+"machines",
	"Machines of the pool by state, as netstatus -m shows them.", []string{"state"}, nil)

// machineCollector counts the machines by state: the database's state, with
// draining and gossip's suspicion of up machines as GET /v1/machines shows
// them.
type machineCollector struct{ s *Server }

// Describe sends the descriptor of the machine counts.
func (c *machineCollector) Describe(ch chan<- *prometheus.Desc) { ch <- machinesDesc }

// Collect counts the machines under the database's read lock.
func (c *machineCollector) Collect(ch chan<- prometheus.Metric) {
	pool := c.s.pool(time.Now())
	counts := make(map[string]int, len(machineStates))
	c.s.fsm.Read(func(v fsm.View) {
		for _, m := range v.Machines() {
			counts[machineState(m, pool[m.Name].Suspect)]++
		}
	})
	for _, st := range machineStates {
		ch <- prometheus.MustNewConstMetric(machinesDesc, prometheus.GaugeValue, float64(counts[st]), st)
	}
}

var (
	healthyDesc = prometheus.NewDesc(metricsPrefix+"healthy",
		"1 while this server is healthy as netstatus -s shows it: it sees a leader and hears from it, writes its log, and holds what the leader committed; else 0.", nil, nil)
	problemDesc = prometheus.NewDesc(metricsPrefix+"health_problem",
		"1 for the problem that makes this server unhealthy now (netstatus -s says more), 0 for the others.", []string{"problem"}, nil)
)

// healthCollector reports the server's health as self reports it, with
// the kind of problem that makes it unhealthy.
type healthCollector struct{ s *Server }

// Describe sends the descriptors of the health metrics.
func (c *healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- healthyDesc
	ch <- problemDesc
}

// Collect works out the server's health now.
func (c *healthCollector) Collect(ch chan<- prometheus.Metric) {
	kind, _ := c.s.healthNow()
	ch <- prometheus.MustNewConstMetric(healthyDesc, prometheus.GaugeValue, boolFloat(kind == ""))
	for _, k := range problemKinds {
		ch <- prometheus.MustNewConstMetric(problemDesc, prometheus.GaugeValue, boolFloat(k == kind), k)
	}
}
