// Package lease is the leader's table of stub leases: when each machine
// last renewed, the load, own load and owner idleness it reported then,
// what it proved by echoing the token of an earlier answer (that its
// lease provably held over a span, the pool size it counts and the
// outage grace it was told), the restart leases this leadership granted,
// and the pool's join order with the quorum check of the outage ride-out
// (PoolOrder.QuorumFrom).
//
// It also keeps the server's Book: what a renewal needs of the
// database, machine by machine, filled by the FSM as it applies entries,
// so that a renewal takes no FSM lock (see Idle cost, below).
//
// It owns the arithmetic of leases and proofs and nothing else: it does
// not talk to Raft, stubs or gossip, and it decides no expiry. The
// server's leader asks it (Silence, Expired, Held, Grace, Knows, Back)
// and commits what follows. It is soft state: a new leader starts a new
// Table, and tokens of another leadership prove nothing to it. Every
// method may be called from several goroutines.
//
// # Riding out a control-plane outage
//
// The lease alone would stop every restartable job 3 s into any outage of
// the whole server group (a pause, a power cut of the server room, every
// server cut off from the machines), though nobody could run those jobs
// elsewhere meanwhile. So a stub whose lease runs out asks the pool before
// it stops (stub/outage.go), and the leader keeps a rule that makes the
// answer safe (server/lease/expiry). Up to --outage-grace (default 1 h,
// at most 24 h; 0 turns this off), the rule is:
//
//   - What the stub knows. Every lease answer tells it its *position* in
//     the pool (the order machines first joined: CreateIndex, then name;
//     machines are never forgotten, so positions never change), the pool's
//     *size*, and the grace. A stub with less than its renewal interval plus
//     0.4 s (client.OutageVouchFor: 0.9 s) of lease left says so to anyone who asks (`GET /v1/outage`).
//     Once its lease runs out, it keeps its restartable work only while it
//     holds a *cover*: an answer, received within client.OutageAnswerWithin
//     (0.4 s) of asking, in which more than half of the first k machines (k
//     the largest pool size it or any answer knows) said so, in statements
//     made after it asked. A cover lasts client.OutageCoverFor (0.8 s) from
//     the ask, so even the latest answer leaves 0.4 s, four asks, of cover
//     to a stub starved of CPU while the servers come back (0.3 s covers
//     beginning at the ask let a stub lose its work to a stall of under a
//     second). The stub asks every 0.1 s, and writes the cover's end to the
//     lease file, so a dead or frozen stub's supervisors still stop the
//     jobs when covers stop. One stub, the lowest-named that answers,
//     collects statements for everyone (`POST /v1/outage/witness`): its
//     round begins after the request arrived and asks every stub in its
//     gossip view; past client.OutageFanOut stubs it asks through a tree
//     of name ranges for their tallies, and a stub asks the head of its
//     range, which asks the witness (stub/outage_tree.go). However deep,
//     every statement counted was made after the ask and before the
//     answer arrived, which the stub takes only within
//     client.OutageAnswerWithin: the window below holds.
//   - Coming back. The servers return to the stubs over a second or more,
//     not at one instant: a partition heals route by route, dead
//     connections are redialled, a leader answers a burst. A stub that
//     renewed would at once stop saying its lease ran out, and the stubs
//     still cut off would lose their majority 0.8 s later (chaos seed 7
//     lost two jobs' work so). So a renewal sent while the stub said so
//     makes it go on saying so for client.OutageVouchAfterFor its
//     interval after its answer (2 s at 0.5 s renewals, 6 s at 1.5 s, 12 s
//     at 3 s: a larger pool comes back over some four intervals after the
//     election, its held renewals let go at half its rate, then each
//     stub's retry wait and round; leaseKeeper.vouchUntil); only the
//     lease starts this, never
//     the vouching itself. Meanwhile its renewals echo no token, so no
//     proof the leader holds claims the stub silent while it vouches
//     (TestStubBackLastKeepsItsWork: one stub back 1.5 s after the others
//     keeps its work; without the vouching it lost it in 3 of 3 runs).
//   - What the leader knows. Each answer carries a token the stub echoes in
//     its next renewal with the token's age (client.LeaseToken). The
//     request that won an answer was sent after the previous token's issue
//     plus that age, so a stub that echoes a token holds a lease until at
//     least that moment plus L, and says nothing to anyone until 0.9 s
//     before it (lease.Table.Held). The token also proves the pool size the
//     stub counts (lease.Table.Knows; at least its own position).
//   - The rule. After L + margin of silence, the leader declares a lease
//     expired only if, for every k from what the machine has proven it
//     counts to the pool's size, at least half of the first k machines
//     provably held their leases throughout the window in which statements
//     could have covered the stub at the moment it had to stop
//     (statementWindow: from the margin plus a cover before now, to the
//     margin less an answer's time plus 0.9 s before now). Those machines
//     made no statement then, so no cover existed, and the stub (or its
//     supervisor) stopped by now minus the margin, as in the plain
//     argument. A machine proves that with a renewal that arrived at most L
//     before the window's end and no later than its start, echoing a token
//     (a stub vouching after an outage echoes none; it stops vouching
//     before it sends one that does): an interval of L less a cover, an
//     answer's time and 0.9 s (0.9 s), which renewals every 0.5 s fill
//     (TestStatementWindowLeavesARenewal). Past the grace, both sides fall
//     back to the plain rule; a leader that does not know which grace a
//     silent stub was told assumes 24 h.
//   - What it buys. A pause, crash or partition of the whole server group
//     stops nothing: every stub's lease runs out within a renewal interval
//     of the others', they vouch for each other, and their ends are
//     recorded when the servers return, while those back first vouch 2 s
//     (up to 12 s in a large pool) more for those that are not yet. A machine cut off alone, or with
//     fewer than half of the pool, finds no majority and stops at its
//     lease, and the leader, still renewing more than half of the pool,
//     restarts its work after the usual 4 s. A new leader expires nobody
//     until stubs have proven their leases to it (two renewals), so a
//     leader just back does not declare the whole pool lost. When half or
//     more of the machines die at once (a rack's power), the leader cannot
//     tell that from an outage it is on the wrong side of, and waits for
//     the grace before restarting their work.
//   - What it costs. Nothing while the servers are up: one token per
//     renewal. After an outage, the leader's proofs resume some 2.5 s later
//     (the vouching, then a renewal whose token has a basis; at 10,000
//     machines some 15 s), and so does
//     its power to expire a machine that died meanwhile. During an outage,
//     every stub asks the witness every 0.1 s and the witness asks every
//     stub once per 0.1 s (rounds share the asks that arrive meanwhile):
//     about 20 small requests per stub per second, all to or from the
//     witness (past the fan-out, to or from the heads of its range, each
//     head asking at most client.OutageFanOut stubs a round), and a
//     lease-file write per stub per 0.1 s. And a machine
//     that dies before it proves its lease to the current leader (one
//     elected within seconds of the death) is expired only as its
//     position allows (Knows): the first machine of the join order, which
//     could cover itself as a pool of 1, only after the assumed 24 h grace
//     (TestSimPoolKill lets its job avoid that machine for this reason).
//
// # A stub restart: restarting, not lost
//
// A stub stopped to be started again (an upgrade, `systemctl restart`)
// leaves its jobs running under the supervisor host, so losing them, as a
// machine that left would, is wrong: the non-restartable ones would show
// lost until the new stub reported them, and the restartable ones would be
// killed by their supervisors at the plain lease and started elsewhere if
// the new stub took more than 3 s. So SIGTERM, what systemd sends, stops
// the stub for a restart (Stub.Restart); SIGINT or `netmgr stub --leave`
// makes it leave the pool for good (Stub.Shutdown).
//
//   - What the stub does (stub/lease_restart.go). It stops renewing and
//     waits for its renewal loop to end, so no renewal built after this
//     point leaves; then it asks for a *restart lease*
//     (LeaseRequest.Restarting). A granted one (LeaseResponse.Restarting)
//     lasts the servers' restart grace from when the request was sent; the
//     stub writes its end to the lease file and nothing writes the file
//     after that. Then it leaves gossip and stops. No grant (an older
//     group, a grace of 0, a machine whose lease already expired): it
//     leaves as for good.
//   - What the leader does (server/restart.go). After the usual leadership
//     check it commits StubRestarting (command level 34, proposed only when
//     every server applies it), and only then grants --restart-grace
//     (default 2 min, at most MaxRestartGrace, 10 min). The fsm marks the
//     machine restarting (fsm/restarting.go): it takes no new work, its
//     instances stay as they are, and gossip's report that it left commits
//     no StubLeave. expiry.Keeper expires a restarting machine's lease only
//     after the grace plus the margin of silence, counted from the last
//     renewal it received (the restart request is one) or its election, as
//     for the plain lease: the stub's supervisors stop at send + grace, at
//     least the margin before. No outage rule shortens it. A leader that
//     did not grant the lease itself (a new election) does not know which
//     grace was granted and assumes MaxRestartGrace.
//   - Back. The new stub first lowers the lease file to the lease it
//     assumes at its start (supervisor.LowerLease: never raised, so an
//     expired lease is not revived), then renews and joins gossip. The
//     leader holds the machine restarting, and commits no StubJoin for it
//     even when gossip shows it alive, until it echoes a token issued after
//     StubRestarting was committed (lease.Table.Back): the stub that
//     stopped sent its last renewal before asking, so only the new one can.
//     From then on the file holds only plain leases, and StubJoin brings
//     the machine up with the plain lease. The new stub re-adopts its
//     attempts (runner_recover.go) and reports their ends, which are
//     current: same attempt, same machine.
//   - Not back. Once the restart lease has expired the leader commits
//     LeaseExpired as for a lost machine (applyLeaseExpired takes
//     restarting like up): the supervisors killed the restartable attempts
//     by then, and those start elsewhere with a new attempt number; the
//     others are unknown, then lost when the StubLeave for the departed
//     gossip member follows. So at most one attempt of an instance runs at
//     any time, by the argument of DESIGN.md's Leases and fencing with
//     the grace in place of L.
//   - The cost. A machine really gone after a SIGTERM (shut down for good
//     without --leave) has its restartable work moved after the grace
//     instead of 4 s; decommission with --leave, or drain first.
//
// # Idle cost: a renewal that costs the same at any pool size
//
// Every stub renews every 0.5 s (up to 1,666 machines; see What
// stays), all to the leader, so the renewal path
// is the leader's idle cost (issue 36). What it costs now, and why it is
// still safe:
//
//   - No FSM lock. A renewal needs of the database only the machine's
//     record (state, address, index, health, owner verdict), the owner
//     settings the database gives it and its place in the join order.
//     Book keeps exactly that, filled by the FSM itself: fsm's
//     MachineObserver is told, under the FSM's write lock, of every
//     machine an entry changed, so the book is never older than what a
//     reader of the FSM could see, and a renewal that reads it takes only
//     Book's short mutex. A snapshot of a million jobs, or an Apply queued
//     behind one, no longer holds renewals up (TestRenewalTakesNoFSMLock),
//     and the fencing argument of DESIGN.md's Leases and fencing is
//     unchanged: the index a renewal reports is the machine's
//     ModifyIndex as of an applied state, as before. After a snapshot
//     restore the book is refreshed whole at the next entry and when the
//     server wins an election (a leader restores none during its term).
//   - Machines by name. The owner settings come through the database's
//     declarations indexed by name (fsm's declIndex), not a scan of every
//     declared machine; the planner's effective attributes likewise.
//   - No sort. The join order only grows: machines are never forgotten
//     and a new one is created at a later index than every other, so the
//     book appends each entry's new machines (sorted among themselves)
//     and hands out prefixes that later joins do not change (Book.Pool);
//     only a restore sorts.
//   - VerifyLeader shared in a window. The rule stays: a renewal is
//     granted only after a round of Raft's VerifyLeader that began after
//     it arrived, so a deposed leader extends no lease (a new leader was
//     elected by a quorum that now refuses the old term's heartbeats).
//     The round waits 5 ms (checkGather) for more renewals to ask, so
//     every renewal that arrived before it began shares it: at 20,000
//     renewals a second at most ~200 rounds, one heartbeat per follower
//     each, instead of one per round trip. Raft's leader lease (the
//     leader steps down after 250 ms without a quorum) would spare even
//     those, but a leader paused past an election resumes still calling
//     itself leader until its next lease check, and would grant renewals
//     the new leader never counts: the round is what makes that safe.
//   - One stream per stub, not a request per renewal. A renewal as its
//     own request cost the leader a new HTTP/2 stream, its headers and
//     the whole middleware (CORS, authentication, rate limit, metrics)
//     for a few hundred bytes. The stub opens one long-lived request to
//     the leader (client.LeaseStreamPath, server's handleLeaseStream)
//     and sends each renewal as a line on it; the leader answers each
//     with a line, after the same leadership check and table update as a
//     plain renewal (grantLease). The certificate is checked once, at
//     the opening, and must name every renewal's machine. Every server
//     takes a stream and a stub keeps one with each: a server that does
//     not lead holds a renewal on it until a leader is known, then grants
//     it or passes it on to the leader (see Relayed renewals, below), and
//     keeps the stream, so when the leader dies the renewals go on the
//     survivors' streams, with no new connection
//     (client's lease_standby.go; TestLeaseStreamsCarryAFailover). A renewal the stream
//     does not answer within the stub's leader patience goes by a plain
//     request that asks the other servers first (a leader cut off from
//     this stub costs no more than before), and the stream is kept,
//     owing that answer, unless it does not come within the next patience
//     (client's TestLeaseStreamKeptThroughASlowAnswer,
//     TestLeaseStreamHungLeaderFallsBackToTheOthers). At 1,000 simulated
//     machines at rest (`netmgr-bench -only scale -scale-pool 1000`):
//     the leader 0.57 -> 0.33-0.38 cores, the simulator 0.53 -> 0.25-0.33;
//     0.25-0.32 and 0.20-0.25 once a follower no longer copied the whole
//     gossip view to forward a request and frames were 16 KiB
//     (doc/benchmark.md, *Renewals on a stream*).
//     What remains a renewal's cost is the connection's: a TLS record and
//     a system call each way, and the goroutines that carry them (a
//     profile at 1,000: the handler 23% of the leader, HTTP/2's frame
//     loops 33%, the Go scheduler a quarter, Raft's heartbeats 8%).
//   - Relayed renewals: the leader's sockets carry batches. What a
//     renewal on a stream costs is the connection's, wherever it ends:
//     about 30 us of a server's CPU (at 3,000 machines at rest, 54-59% of
//     a relaying follower's samples in the stream's read, TLS and write).
//     From Config.LeaseRelayFrom machines (`--lease-relay-from`, 1,000)
//     the leader names a follower in each answer (RenewVia: the
//     machine's hash over the live servers of the Raft configuration),
//     the stub moves its renewals to the stream it keeps there, and the
//     follower passes them on over one connection, a batch per round
//     trip (server's lease_relay.go). The leader grants each as on its
//     own stream, after a leadership round begun after the batch
//     arrived, so after the stub sent it: the relay is a slower
//     network, and nothing of the argument above changes. A relay whose
//     leader died holds its batch, as a server with no leader holds a
//     renewal, until Raft names another or this server wins. At 3,000
//     simulated machines at rest (`-only scale -scale-pool 3000`, one
//     run before, three after): the leader 0.200 -> 0.125-0.153 cores,
//     each follower 0.010 -> 0.101-0.121, the servers together 0.22 ->
//     0.33-0.39 (the followers pay what the leader did, and the batches
//     cost both ends); the leader killed, a submit accepted after 0.80 s
//     (1.38 before), 3 and 8 connections to the survivors (3 and 2). It
//     buys the leader's headroom, which Raft's heartbeats need, with
//     the group's CPU: below 1,000 machines every stub renews with the
//     leader, a hop shorter.
//   - Nothing written, nothing woken, when nothing changes. Raft's empty
//     appends every CommitTimeout (50 ms by default, two RPCs per
//     follower each) were a third of an idle leader's CPU: CommitTimeout
//     is a second and the leader appends a barrier 10 ms after its last
//     write instead (server's commitNudge), so followers learn that write's
//     commit at once and an idle group exchanges only heartbeats. The
//     stub writes its lease file only while restartable work runs or
//     starts (only those supervisors read it; a restartable Start
//     publishes first, and a file behind the lease only stops a
//     supervisor sooner), and its outage loop sleeps until the lease
//     could come within client.OutageVouchFor of its end instead of
//     waking ten times a second.
//   - What stays, and what scales. Up to 1,666 machines the renewal
//     interval (0.5 s) and lease (3 s) do not change: the outage rule
//     needs a renewal within every 0.9 s
//     (TestStatementWindowLeavesARenewal), suspicion comes after 1 s of
//     silence, and an election must fit in the lease. A larger pool
//     renews every 0.3 ms per machine (3 s at 10,000, the most), so the
//     leader takes at most some 3,300 renewals a second; the vouching
//     grows with the interval (stubs an interval apart must agree), so
//     the lease is twice the interval plus 2 s (8 s at 10,000: a dead
//     machine's work moves 9 s after its last renewal) and suspicion
//     comes after two intervals (TimingFor, TestTimingFor; each answer
//     tells the stub its timing, the table counts what it granted, and a
//     new leader assumes the timing of the pool it knows, which no
//     earlier one exceeded). Raft's heartbeats (a tenth to a fifth of
//     the leader's heartbeat timeout: every 100-200 ms per follower in a
//     pool under 1,000 machines, where the leader takes twice the
//     followers' 500 ms, raftnode's LeaderPaceFactor; 50-100 ms in a
//     larger one) are the price of an election within 0.5-1.5 s. On 3
//     TLS servers and 2 stubs at rest (netmgr-bench -only idle: CPU from /proc over 60 s windows, on
//     a shared 2-core box under a load average near 20; medians and
//     ranges of 9 windows before and 6 after) the leader went from 34
//     (28-38) to 21.5 (18.5-23.5) ms of CPU a second, each follower from
//     9.9 (8.8-11.2) to 7.2 (5.3-9.8), each stub from 8.4 (6.8-9.0) to
//     5.7 (4.5-6.0). With no stub at all the servers use 14-18 (leader)
//     and 6-7 (followers): the floor is Raft's heartbeats, gossip's
//     probes and the Go runtime's wake-ups around them, so the 3
//     and 1 ms/s are not met; they need longer Raft timeouts, which would
//     slow failover. The leader's own pace (heartbeats every 100-200 ms
//     where they went every 50-100 ms, the followers' timeout unchanged)
//     took the idle leader's median from 28.5 to 22.3 ms/s and each
//     follower's from 10.0 to 9.0 (7 runs before, 8 after), the leader's
//     SIGKILL still answered by a submit in 0.7-1.3 s. A CPU profile of
//     the idle leader (perf, 40 s, load 17) gives the shares: the Go runtime's scheduler and sysmon, woken
//     by each burst of work, over half (sysmon alone 30%); Raft's
//     heartbeats 14% (every 50-100 ms to each follower, and one more per
//     follower for each VerifyLeader round a renewal asks); renewals'
//     handlers 2.5%; the whole leader loop, expiry duty included, 1.2%;
//     on a follower the lag check 0.6%. So what is left is the number of
//     wake-ups, not the work done in each.
package lease
