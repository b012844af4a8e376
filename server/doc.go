// Package server is a netmgr server: a member of the Raft group that holds
// the database (package fsm), the HTTP/JSON API for users and stubs, and,
// while it leads, the leader's duties: the scheduler, the dispatcher, the
// membership watcher and the lease keeper.
//
// All writes go through one apply helper on the leader; a follower forwards
// write requests to the leader and redirects consistent reads to it. Servers
// find each other through the memberlist pool they share with the stubs and
// form the Raft group by themselves once --bootstrap-expect servers are seen.
//
// It does not run jobs (package stub), does not decide where work runs
// (package server/planner, with matcher and queue, does; the server feeds
// it the database and each machine's liveness and commits its Place) and
// does not parse user input beyond the wire types of package client and the
// database language (package client/dblang).
//
// # Layout
//
// The server and its parts:
//   - server.go: Server, New, Shutdown; config.go: Config and its checks.
//   - Raft, its stores, transport, data dir checks and storage health are
//     the package server/raftnode; raft_admit.go: refusing or adding a
//     would-be server once raftnode checked its certificate; bootstrap.go:
//     forming a new group from gossip; command_level.go: the newest
//     command every server applies.
//   - reload.go: Reload, reading TLS material and the gossip keyring
//     again on SIGHUP; warnings once a minute per peer come from
//     internal/warnlimit.
//   - gossip.go: the memberlist node and its view of the pool;
//     gossip_keyring.go: its encryption keys and their reload; pool.go: that
//     view as the leader sees it (suspicion, reported loads) and as the
//     planner takes it (liveness).
//   - apply.go: the one path by which the server changes the database;
//     entry_merge.go: merging concurrent callers' items into batch entries.
//   - errors.go: the package's sentinel errors.
//   - translate.go: the one place the log format (fsm) and the wire format
//     (client) meet; database.go: the database language to the log's form,
//     and --database FILE.
//   - metrics.go: the Prometheus registry and its instruments.
//   - lag.go: how far this server's log is behind the leader's commits.
//     It and the Raft store's failed writes (raftnode.Health) make the
//     server unhealthy in netstatus -s and /metrics (self.go: health).
//   - history.go: every server's history (package server/history): the
//     FSM's recorder feeding a writer goroutine, and the retention sweep;
//     history_catchup.go: filling the gaps a snapshot restore left from a
//     peer's GET /v1/history/range; http_history.go: GET /v1/history and
//     that range.
//
// The leader, whose duties leaderLoop in leader.go lists and calls, one
// call each:
//   - leader.go: the leader loop, started and stopped from Raft's
//     leadership notifications; announceLeadership.
//   - scheduler.go: schedule, one planner pass committed as one Place.
//   - dispatcher.go: Starts and Signals the database owes the stubs.
//   - membership.go: gossip joins and failures to StubJoin, StubLeave,
//     AddVoter; rejoin.go: joining the gossip pool of machines the
//     database holds and gossip does not (after a restart of the group).
//   - lease.go: the lease timing and leadership checks; lease_expiry.go:
//     expireLeases and the outage rule; restart.go: granting a restart
//     lease. The lease table itself (renewals, proofs, restart holds, the
//     pool's join order and quorum) is the package server/lease.
//   - reservations.go: expireReservations, and choosing machines to
//     reserve.
//   - tokens.go: sweepTokens; and the form of API tokens and tokenUser,
//     which maps a bearer token to its user.
//   - database.go: loadInitialDatabase.
//   - cron.go: cronFirer.fire, a CronFire for every cron job due,
//     computed from the committed state (fsm.CronDue); and parsing cron=
//     expressions (robfig/cron), for the leader, for submit's checks and
//     for the next firing the API shows.
//   - retention.go: jobExpirer.run, one JobsExpire removing the finished
//     jobs past --job-retention and --job-retention-count.
//   - mail.go: the mail sender, which sends the pending mail the
//     database files and commits MailSent for each outcome, through
//     package mailer (an SMTP relay or sendmail).
//
// The commit paths that more than one caller shares:
//   - children.go: CHILD_REGISTER and CHILD_TERM from stubs, whether they
//     come by POST /v1/children or in a stub's answer to a batch of
//     Starts.
//   - submit.go: a new job, as a SubmitPlace when part of it can start at
//     once, else in a Submits entry shared with concurrent submits.
//
// The API: http.go holds the routes and the helpers every handler uses,
// forward.go sends writes to the leader, and each http_*.go file holds the
// handlers of one group of routes and the helpers only they use (http_auth.go:
// who may do what). Nothing outside the http_*.go files calls into them;
// validate.go checks a submitted job, self.go is this server's report of
// itself and the question it asks its peers. limits.go holds the per-user
// limits the API applies: ratelimit.go the request rate (around the
// routes), stream_limit.go the open log and event streams, quota_blobs.go
// the blob store bytes (at PUT /v1/blobs and at submit).
package server
