package server

import (
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
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

// metrics is one server's Prometheus instrumentation (internal/promtext,
// which says why not client_golang), on a registry of its own (tests
// run several servers in one process). The event counters and
// histograms are fed by one-line hooks in the code they time; the gauges
// read Raft, the database and the gossip pool when /metrics is scraped.
// Safe for concurrent use.
type metrics struct {
	reg *promtext.Registry

	commitSeconds   *promtext.HistogramVec // by command
	elections       *promtext.Counter
	passSeconds     *promtext.Histogram
	passPlaced      *promtext.Histogram
	dispatchSeconds *promtext.Histogram
	startsFailed    *promtext.Counter
	signalsSent     *promtext.Counter
	leasesExpired   *promtext.Counter
	stubJoins       *promtext.CounterVec // by where the facts came from
	leaseRenewals   *promtext.CounterVec // by path: stream or request
	requests        *promtext.CounterVec // by route
	deniedRequests  *promtext.CounterVec // by reason
	startRequests   *promtext.Counter
	connsAccepted   *promtext.Counter
	handshakesLost  *promtext.CounterVec
	mailsSent       *promtext.Counter
	mailFailures    *promtext.Counter
	policyErrors    *promtext.CounterVec // by function
}

// newMetrics registers s's metrics. The gauges read s.raft, s.fsm and
// s.gossip lazily, so they may be set after this call but must be before
// the first scrape.
func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: promtext.NewRegistry(),
		commitSeconds: promtext.NewHistogramVec(metricsPrefix+"raft_commit_seconds",
			"Time from proposing a command to Raft on the leader to its being committed and applied here, by command.",
			commitBuckets, []string{"command"}),
		elections: promtext.NewCounter(metricsPrefix+"raft_elections_total",
			"Leaders this server has seen elected (each change to a new known leader)."),
		passSeconds: promtext.NewHistogram(metricsPrefix+"scheduler_pass_seconds",
			"Duration of one scheduling pass on the leader, planning and the Place commit; _count is the number of passes.",
			passBuckets),
		passPlaced: promtext.NewHistogram(metricsPrefix+"scheduler_pass_placed_instances",
			"Instances one scheduling pass placed (accepted by the Place commit); _sum is the total placed.",
			placedBuckets),
		dispatchSeconds: promtext.NewHistogram(metricsPrefix+"dispatch_start_latency_seconds",
			"Time from the leader stamping a placement (just before its Place commit) to the stub acknowledging the Start and the CHILD_REGISTER it answered with being committed, retries included.",
			dispatchBuckets),
		startsFailed: promtext.NewCounter(metricsPrefix+"dispatch_starts_failed_total",
			"Starts sent to a stub that failed and will be retried."),
		signalsSent: promtext.NewCounter(metricsPrefix+"dispatch_signals_sent_total",
			"Signals (kill, restart, suspend, resume) a stub acknowledged."),
		leasesExpired: promtext.NewCounter(metricsPrefix+"leases_expired_total",
			"Machine leases this server, as leader, declared expired."),
		stubJoins: promtext.NewCounterVec(metricsPrefix+"stub_joins_total",
			"Machines this server, as leader, joined to the pool (StubJoin committed), by where their facts came from: \"renewal\" (sent with the stub's lease renewal) or \"fetched\" (GET /v1/facts on the stub, a connection of the leader's own).", []string{"facts"}),
		leaseRenewals: promtext.NewCounterVec(metricsPrefix+"lease_renewals_total",
			"Lease renewals this server, as leader, granted, by the path they came on: \"stream\" (a stub's lease stream, POST /v1/lease/stream), \"request\" (one POST /v1/lease each) or \"relay\" (a follower's lease stream, passed on in a batch: POST /v1/lease/relay).", []string{"path"}),
		deniedRequests: promtext.NewCounterVec("netmgr_requests_denied_total",
			"Requests refused because they proved no identity or the identity may not do what they asked, by reason.", []string{"reason"}),
		requests: promtext.NewCounterVec(metricsPrefix+"http_requests_total",
			"API requests this server answered, by route (method and pattern; \"unmatched\" for none).", []string{"route"}),
		connsAccepted: promtext.NewCounter(metricsPrefix+"http_connections_total",
			"Connections this server's API accepted; over TLS each costs a handshake."),
		handshakesLost: promtext.NewCounterVec(metricsPrefix+"http_handshakes_failed_total",
			"API TLS handshakes that failed, by reason: \"client_gone\" (the client closed the connection while it waited its turn, so it got no key exchange) or \"failed\" (any other: a bad certificate, a timeout).", []string{"reason"}),
		startRequests: promtext.NewCounter(metricsPrefix+"dispatch_start_requests_total",
			"Requests carrying Starts (POST /v1/starts) this server, as leader, sent to stubs."),
		mailsSent: promtext.NewCounter(metricsPrefix+"mail_sent_total",
			"Mail this server, as leader, handed to the relay or sendmail."),
		mailFailures: promtext.NewCounter(metricsPrefix+"mail_send_failures_total",
			"Attempts of this server, as leader, to send mail that failed (each is retried with backoff, or given up after 12)."),
		policyErrors: promtext.NewCounterVec(metricsPrefix+"policy_errors_total",
			"Calls of the site policy script on this server that failed or ran out of steps (the built-in order or acceptance applied), by function.",
			[]string{"function"}),
	}
	gauge := func(name, help string, read func() float64) *promtext.ValueFunc {
		return promtext.NewGaugeFunc(metricsPrefix+name, help, read)
	}
	m.reg.MustRegister(
		promtext.GoCollector(),
		promtext.ProcessCollector(),
		m.commitSeconds, m.elections, m.passSeconds, m.passPlaced,
		m.dispatchSeconds, m.startsFailed, m.signalsSent, m.leasesExpired, m.stubJoins, m.leaseRenewals,
		m.requests, m.deniedRequests, m.startRequests, m.connsAccepted, m.handshakesLost, m.mailsSent, m.mailFailures, m.policyErrors,
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
		gauge("lease_renewals_held", "Lease renewals this server holds until a leader is known (at most 0.8 s each).",
			func() float64 { return float64(s.leaseHeld.Load()) }),
		gauge("lease_streams_open", "Lease streams open on this server: a stub keeps one with each server, its renewals on the leader's, the others waiting for a leader change.",
			func() float64 { return float64(s.leaseStreams.Load()) }),
		gauge("raft_is_leader", "1 while this server leads the Raft group, else 0.",
			func() float64 { return boolFloat(s.raft.State() == raft.Leader) }),
		gauge("gossip_health_score", "Memberlist's awareness score: 0 is healthy, higher means this node is slow to answer probes.",
			func() float64 { return float64(s.gossip.ml.HealthScore()) }),
		gauge("gossip_members", "Live members of the gossip pool, servers and stubs, this node included.",
			func() float64 { return float64(s.gossip.ml.NumMembers()) }),
		gauge("blob_store_bytes", "Bytes of the files jobs move (copy_in, copy_out archives) this server keeps in DATA-DIR/blobs.",
			func() float64 { _, n := s.blobBytes(); return float64(n) }),
		gauge("blob_store_blobs", "Archives of the files jobs move this server keeps in DATA-DIR/blobs.",
			func() float64 { n, _ := s.blobBytes(); return float64(n) }),
		gauge("raft_behind_entries", "Entries the leader had committed that this server's log lacked a second later (0 on the leader and on a follower keeping up).",
			func() float64 { return float64(s.lag.behind.Load()) }),
		promtext.NewCounterFunc(metricsPrefix+"raft_log_write_errors_total",
			"Writes to the Raft log and stable store (raft.db) that failed: disk full, I/O errors.",
			func() float64 { return float64(s.storeHealth.Failures()) }),
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

// countConn counts the connections the API accepts, as http.Server's
// ConnState hook.
func (m *metrics) countConn(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		m.connsAccepted.Inc()
	}
}

// handshakeFailed counts an API handshake that failed.
func (m *metrics) handshakeFailed(clientGone bool) {
	reason := "failed"
	if clientGone {
		reason = "client_gone"
	}
	m.handshakesLost.WithLabelValues(reason).Inc()
}

// denied counts a refused request.
func (m *metrics) denied(reason string) { m.deniedRequests.WithLabelValues(reason).Inc() }

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return m.reg.Handler()
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

func boolFloat(b bool) float64 { return promtext.Bool(b) }

// queueCollector reports what each queue holds, read from this server's
// copy of the database (under its read lock) at scrape time.
type queueCollector struct{ fsm *fsm.FSM }

// Collect reads the queues under the database's read lock.
func (c *queueCollector) Collect() []promtext.Family {
	var qs []fsm.QueueView
	c.fsm.Read(func(v fsm.View) { qs = v.Queues() })
	queuedBy := promtext.Family{Name: metricsPrefix + "queue_queued_instances",
		Help: "Instances waiting in the queue for a machine.", Type: promtext.GaugeType}
	activeBy := promtext.Family{Name: metricsPrefix + "queue_active_instances",
		Help: "Instances of the queue's jobs holding a slot: placed, running or suspended.", Type: promtext.GaugeType}
	queued, active := 0, 0
	for _, q := range qs {
		label := []promtext.Label{{Name: "queue", Value: q.Name}}
		queuedBy.Samples = append(queuedBy.Samples, promtext.Sample{Labels: label, Value: float64(q.Waiting)})
		activeBy.Samples = append(activeBy.Samples, promtext.Sample{Labels: label, Value: float64(q.Active)})
		queued += q.Waiting
		active += q.Active
	}
	return []promtext.Family{queuedBy, activeBy,
		promtext.Gauge(metricsPrefix+"queued_instances", "Instances waiting for a machine, all queues.", float64(queued)),
		promtext.Gauge(metricsPrefix+"active_instances", "Instances holding a slot (placed, running or suspended), all queues.", float64(active)),
	}
}

// machineStates are the states netstatus -m shows, each reported even when
// no machine is in it.
var machineStates = []string{client.MachineUp, client.MachineSuspect, client.MachineDraining,
	client.MachineAsleep, client.MachineRestarting, client.MachineUnreachable, client.MachineDown}

// machineCollector counts the machines by state: the database's state, with
// draining and gossip's suspicion of up machines as GET /v1/machines shows
// them.
type machineCollector struct{ s *Server }

// Collect counts the machines under the database's read lock.
func (c *machineCollector) Collect() []promtext.Family {
	pool := c.s.pool(time.Now())
	counts := make(map[string]int, len(machineStates))
	c.s.fsm.Read(func(v fsm.View) {
		for _, m := range v.Machines() {
			counts[machineState(m, pool[m.Name].Suspect)]++
		}
	})
	f := promtext.Family{Name: metricsPrefix + "machines",
		Help: "Machines of the pool by state, as netstatus -m shows them.", Type: promtext.GaugeType}
	for _, st := range machineStates {
		f.Samples = append(f.Samples, promtext.Sample{Labels: []promtext.Label{{Name: "state", Value: st}}, Value: float64(counts[st])})
	}
	return []promtext.Family{f}
}

// healthCollector reports the server's health as self reports it, with
// the kind of problem that makes it unhealthy.
type healthCollector struct{ s *Server }

// Collect works out the server's health now.
func (c *healthCollector) Collect() []promtext.Family {
	kind, _ := c.s.healthNow()
	problem := promtext.Family{Name: metricsPrefix + "health_problem",
		Help: "1 for the problem that makes this server unhealthy now (netstatus -s says more), 0 for the others.", Type: promtext.GaugeType}
	for _, k := range problemKinds {
		problem.Samples = append(problem.Samples, promtext.Sample{Labels: []promtext.Label{{Name: "problem", Value: k}}, Value: boolFloat(k == kind)})
	}
	return []promtext.Family{problem,
		promtext.Gauge(metricsPrefix+"healthy", "1 while this server is healthy as netstatus -s shows it: it sees a leader and hears from it, writes its log, and holds what the leader committed; else 0.", boolFloat(kind == "")),
	}
}
