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
// # Parts
//
// The server is made of these parts. This package's files are named after
// the part they belong to, and the larger parts are packages of their own:
//   - The Server: its configuration and checks, start and Shutdown, Reload
//     of the TLS material and gossip keyring on SIGHUP.
//   - The Raft store (package server/raftnode): Raft and its
//     stores, the TLS stream layer that lets only server certificates
//     speak Raft, the admission check of a would-be server's Raft address,
//     the check of raft.db and the snapshots before Raft opens them, the
//     store health and log lag that make a server unhealthy, forming a new
//     group from gossip, and the command level every server applies.
//   - Gossip (package internal/gossip, shared with the stub): the
//     memberlist node, its encryption keyring, and the pool as the leader
//     sees it (suspicion, reported loads) and as the planner takes it
//     (liveness). See Gossip below.
//   - The apply path: the one helper by which the server changes the
//     database, and the merging of concurrent callers' items into batch
//     entries; the translation between the log format (fsm) and the wire
//     format (client), and the database language to the log's form.
//   - The leader's duties, which leaderLoop lists and calls, one call
//     each: the scheduler (one planner pass committed as one Place,
//     package server/planner), the dispatcher of the Starts and Signals
//     the database owes the stubs (package server/dispatch), membership
//     (gossip joins and failures to StubJoin, StubLeave, AddVoter, package
//     server/membership; joining the pool again, package server/rejoin),
//     the leases (timing and leadership checks, restart leases; expiry
//     and the outage rule are package server/lease/expiry, the table itself package
//     server/lease), reservations, API tokens, the initial database, cron
//     firings (package server/cron, from fsm.CronDue), job retention
//     (JobsExpire, package server/retention) and the mail sender (package
//     server/mail, through server/mailer). The duties in packages of their
//     own hold a duty.Handle (package server/duty) instead of the Server.
//   - The commit paths more than one caller shares: CHILD events from
//     stubs, whether they come by POST /v1/children or in a stub's answer
//     to a batch of Starts; and a new job, as a SubmitPlace when part of it
//     can start at once, else in a Submits entry shared with concurrent
//     submits (see Submitting a job).
//   - The API: the routes and the helpers every handler uses, forwarding
//     writes to the leader, and one file of handlers per group of routes
//     (nothing outside them calls into them), with who may do what, the
//     checks of a submitted job, this server's report of itself, and the
//     per-user limits (see Per-user limits).
//   - The history (package server/history): the FSM's recorder feeding a
//     writer goroutine, the retention sweep, and filling the gaps a
//     snapshot restore left from a peer; the files jobs move (package
//     server/blobstore); the dashboard's feed (package server/ui); the
//     metrics.
//
// # Submitting a job
//
// `netexec --batch FILE` (cmd/netmgr/exec_batch.go) sends many jobs in one
// `POST /v1/jobs/batch` (client.SubmitBatch; handleSubmitBatch,
// server/http_jobs_batch.go): every job is checked as a single submit
// checks it (submitFromRequest, shared with handleSubmit) before any is
// created, so one refused job refuses the batch; the plain jobs then go in
// one Submits entry, the others each in their own entry type, after them.
// No job of a batch takes the SubmitPlace shortcut: planned against the
// same state, they would all be placed on the same free slots. No new entry
// type, so no command level: Submits is the oldest one.
//
// Before committing, handleSubmit learns from the planner, in the same
// planner.PlanSubmit call that places the job when it can
// (server/submit.go's planSubmit), whether any machine meets the job's
// requirements whatever its state (the matcher's Result.Matching); when
// none does it answers the matcher's reason in SubmitResponse.Unrunnable
// (netexec prints it) or, for SubmitRequest.NoQueue, refuses with 409 and
// commits nothing. A job placed at once is runnable. A batch and POST
// /v1/jobs/check make the same call, without placing.
//
// A job reference (lookupJob, server/http_jobs.go) is an id or a name; a
// name means its one live job, else its most recent; several live jobs of
// one name are a 409 listing them. validateSpec refuses a symb_name of the
// form job<NUMBER>, the automatic names the fsm gives (fsm.DefaultJobName):
// the refusal lives in the server, not in Apply, so old logs that hold such
// names replay unchanged, and not in the spec parser, which keeps the
// paper's grammar (its examples say symb_name=job1). netexec resolves
// relative paths and --export on the submitting machine
// (cmd/netmgr/exec_env.go): the servers and the log only ever see absolute
// paths and plain env entries.
//
// # Per-user limits
//
// One user must not starve the others (issue 34): Slurm limits RPCs and
// submissions per user, HTCondor has per-user quotas, Nomad has none
// outside Enterprise. Three limits, each on the verified user
// (principal.User), each counted at the server that first receives the
// user's request (firstHop): a request a stub or server makes on its own
// behalf is never counted, and a write a follower forwards arrives at the
// leader with principal.Forwarded set (only a server certificate's
// forwarded principal sets it; it is not in the JSON a follower sends, so
// no caller can claim it) and is not counted again. All three are soft
// state of each server, in memory, and need no Raft command
// (server/limits.go).
//
//   - Request rate (server/ratelimit.go): a token bucket per user
//     (golang.org/x/time/rate), --user-rate 100 a second with bursts of
//     --user-burst 200, taken before routing. Past it: 429 with
//     Retry-After, but only after holding the request a second (a tarpit,
//     up to 64 held per user, more answered at once); Retry-After then says
//     the whole seconds still to wait, 0 when a token is there. An honest
//     client waits about a second either way; a client that ignores the
//     answer gets one refusal a second per request in flight. Without the
//     hold, the flood suite's 8 such clients drew 1,700 to 3,300 refusals a
//     second, which cost the three servers 0.6 of a core and the flooding
//     process 0.4 on the 2-core VM, and the victim's p50 went from 33-36 ms
//     to 50-97 ms; with it, they get 102 answers and 8 refusals a second,
//     and the victim's p50 is unchanged (without any limit, `--user-rate
//     0`, they got 6,353 answers a second and the p50 doubled). Handlers
//     read the clock before they wait for the limiter's lock, so a bucket
//     takes the later of the request's time and its last one: rate.Limiter
//     given times out of order refills twice for the same interval (the
//     first flood runs let 3.5 times the rate through). Root on a pool
//     machine and admin_ids are exempt (looked up only when the bucket is
//     empty, so the common path reads no state). Buckets idle for a minute
//     are forgotten (full again by then); the map holds only users active
//     in the last minute. The client waits out a 429 with Retry-After at
//     the same server, with a little jitter, at most 20 times and never a
//     wait over 30 s (client/throttle.go); trying the next server would
//     spread a throttled user over every server's budget. A 429 without
//     Retry-After is an error at once.
//   - Open streams (server/stream_limit.go): `GET /v1/jobs/{ref}/logs`,
//     `GET /v1/events?follow=1` and the dashboard's /ui/events each hold a
//     goroutine (and, for logs, a connection to a stub) while open; 32 per
//     user per server (--user-streams). The count sits inside leaderRead,
//     so a follower's redirect is not counted. Past it: 429 without
//     Retry-After, naming the limit.
//   - Blob store bytes (server/quota_blobs.go): a user's use is the blobs
//     their live jobs name (fsm.View.UserBlobs: copy_in archives and kept
//     outputs, each blob once, at its recorded size), the same on every
//     server, plus what they PUT to this server in the last 10 minutes that
//     no job of theirs names yet (in memory, with its time; the sweeper's
//     grace, after which the blob is removed and leaves the count). `PUT
//     /v1/blobs` checks --user-blob-quota (1 GiB) from Content-Length
//     before reading the body and again with the body's size, recording the
//     upload under the same lock, before anything is written or pushed
//     (413). Submit checks again on the leader (413), which sees an upload
//     to another server only through the job's own copy_in: a copy_in that
//     another live job of the user names adds nothing. Kept outputs are
//     counted but never refused (the attempt has run); they can push a user
//     past the quota, and the next copy_in is refused. The same content
//     kept for two users counts for each.
//
// Each refusal names the limit and the flag that raises it, counts in
// netmgr_requests_denied_total{reason} (rate_limited, too_many_streams,
// blob_quota), and is logged once a minute per user and limit with the
// number held back (a flood would otherwise write a log line per request).
//
// What it gives up: the limits are per server, not per cluster, and a read
// a follower redirects costs a token there and another at the leader (the
// client then sends to the leader directly). Writes and consistent reads go
// to the leader, so in practice the leader's counts are the ones that bite,
// but a user who sends ?stale reads to all three servers gets three
// buckets, and three servers' stream limits. A cluster-wide count would
// need the servers to agree on every request; the point is to keep one user
// from starving the others, which a per-server bound does. An upload's
// record is per server, so a user who uploads to each server in turn may
// keep up to the quota through each (3 GiB in every server's store, with
// three servers: uploads are pushed to all) for the 10 minutes until the
// sweeper removes what no job names; the submit's check on the leader still
// holds their jobs' files to the quota. Benchmark: suite flood (README).
//
// # Handshakes when a pool starts at once
//
// A TLS handshake with mutual authentication (ECDSA P-256 certificates)
// costs about 1.2 ms of CPU for both ends together on the benchmark VM.
// netmgr's dialers offer only the post-quantum hybrid on P-256,
// SecP256r1MLKEM768, then P-256 (clusterCurves, client/pki): Go's default,
// X25519MLKEM768, is about a tenth dearer here because X25519 has no
// assembly; listeners keep Go's defaults, so browsers and curl negotiate as
// with any Go server. P-256 alone would save some 15% more, not worth
// giving up the post-quantum key exchange. Connections are pooled and speak
// HTTP/2, so a hedged try that loses its race keeps its connection, and a
// stub's report and lease clients share one. What remains is the count: the
// leader's facts fetch from each joining stub (one handshake per stub, the
// leader dialing), and a stub's renewals, which would reach every server a
// round hedges to and, with the servers learned one by one from gossip,
// often begin on a follower. Session resumption would not help here: in a
// burst every connection is a first one. With the leader named in gossip
// and the leader patience (package stub, Renewing the lease), a stub
// that joins holds one connection, to the leader (50 simulated stubs: 50
// connections, against 73 to 100 without them).
//
// Nor does a join fetch the facts: a stub sends its facts
// (LeaseRequest.Facts, what `GET /v1/facts` answers) with its first
// renewal, and again while an answer asks for them
// (LeaseResponse.WantFacts: the leader holds none and the machine is not
// up, as after a change of leader mid-join). The leader keeps them
// (joinFacts, server/join_facts.go, soft state of the leadership) and the
// join takes them for the API address gossip shows, waiting up to
// joinFactsWait (a lease, 3 s) for them before it fetches them itself. So a
// joining stub costs one handshake, the one it makes to renew, rather than
// two. A server that predates the field refuses the renewal (400); the stub
// then stops sending facts, and a stub that predates it is fetched from
// after that wait: a rolling upgrade joins such stubs 3 s later.
// netmgr_server_stub_joins_total{facts} counts the joins by where their
// facts came from (renewal, fetched). One handshake per stub is the floor:
// gossip proves no machine's name, so a join must rest on a certificate
// check.
//
// A change of leader is the other burst: every renewal goes, within half
// a second, to the survivors and then to the new leader. Had each stub
// only its connection to the old leader, that is a handshake per stub
// with each survivor while they hold an election: at 1,000 simulated
// machines on 2 cores, 1,001-1,013 connections each, and the new leader
// at 0.50-0.56 cores until every machine was up (in one series of runs,
// half to four fifths of the machines' leases lapsed meanwhile). So a
// stub's lease client keeps a connection to every server, and since
// fifth session a lease stream waiting with each (client's
// lease_standby.go; client.WithWarmConnections opens them): every server
// takes a stream, holds a renewal on it while no leader is known, then
// grants it or names the leader. When the leader dies, the renewals go
// on the survivors' streams: at 2,000 and 5,000 simulated machines the
// new leader accepted 2-4 connections and used 0.21-0.24 cores, where
// forwarded plain renewals and a new stream each had brought it 900-8,400
// connections and its follower past Raft's leader lease
// (netmgr_server_http_connections_total, netmgr_server_lease_streams_open;
// doc/benchmark.md, Lease streams that wait with every server).
//
// # Gossip
//
// One memberlist pool holds every server and every stub (server/gossip.go,
// stub/gossip.go). Each member's metadata (client.NodeMeta, under
// memberlist's 512-byte limit) names its role (server or stub) and HTTP
// address; a server adds its Raft address, its --bootstrap-expect and its
// command level; a stub adds its load at join, and leaving just before a
// clean shutdown. Gossip is used for:
//
//   - servers finding each other and bootstrapping;
//   - the leader's membership duty: StubJoin when a live stub appears (with
//     the facts the stub's first lease renewal carried, else fetched with
//     `GET /v1/facts`), StubLeave when gossip reports a machine dead or
//     never mentions it, AddVoter for new servers;
//   - stubs learning the servers' addresses (with --join, Config.Servers
//     and the Servers hint in every Start);
//   - a machine's liveness for placement: alive in gossip and not suspect
//     (Server.liveness, server/pool.go);
//   - the outage witness's list of stubs to ask (peerList, stub/peers.go);
//   - the pool putting itself together after the server group was away (see
//     *Joining the pool again*).
//
// Suspicion and load come from the lease, not from gossip. memberlist keeps
// its suspicion to itself (hashicorp/memberlist#266) and needs
// SuspicionMult × log10(N) × ProbeInterval (9 s at 200 members, 16 s at
// 10,000) to declare a member dead; the lease says suspect in 1 s and
// unreachable in 4 s whatever the pool's size. The load travels with each
// renewal (client.LeaseRequest.Load) to the leader alone, which uses it in
// place of the gossiped one (Server.pool). In the metadata it would be
// broadcast to every member, re-sent 4 × log10(N+1) times by each: at
// thousands of machines that alone fills memberlist's gossip budget and
// lags by minutes. With it out, a member's steady gossip is its probes, and
// metadata changes only on join.
//
// The knobs, all memberlist's DefaultLANConfig() except EnableCompression,
// which is off on both sides (LZW allocates and clears a 64 KB table per
// packet to shrink packets of a few hundred bytes):
//
//   - ProbeInterval (1 s): each member probes one other a second
//   - ProbeTimeout (500 ms): a later ack fails the probe; IndirectChecks
//     (3) members then try
//   - SuspicionMult (4): suspicion lasts 4 × log10(N) × probe interval
//   - SuspicionMaxTimeoutMult (6): without confirmations, up to 6 times
//     that
//   - GossipInterval, GossipNodes (200 ms, 3): the gossip budget: 15
//     packets a second of up to 1,400 bytes
//   - RetransmitMult (4): each message is re-sent 4 × ceil(log10(N+1))
//     times
//   - PushPullInterval (30 s): full state exchange with one member,
//     stretched with size
//
// netmgr's own knobs:
//
//   - lease, renewal, margin, suspect (server/lease.go, server/pool.go) (3
//     s, 0.5 s, 1 s, 1 s): a shorter lease moves lost work sooner; a longer
//     one rides out longer elections and stalls
//   - Raft heartbeat and election timeouts (server/raftnode/node.go) (500 ms):
//     shorter elections against needless ones on a loaded host
//   - entriesInFlight (server/entry_merge.go): ChildEvents, Submits entries
//     in flight per kind (2): more: each request's entry sooner; fewer:
//     more items share an entry
//   - senderParallel (stub/sender.go): a stub's event deliveries in flight
//     (2): the same trade for a stub's requests
//   - loadDelta, loadInterval (stub/gossip.go) (0.05, 2 s): only while no
//     server takes the load with renewals
//   - absentGrace (server/membership) (15 s): how long a new leader
//     waits before a machine gossip never mentioned goes down
//   - rejoinMin, rejoinMax (stub/rejoin.go) (0.5 s, 4 s): while a stub sees
//     no server: back sooner against more joins at a server still down
//   - rejoinBatch, rejoinFirst, rejoinMax (server/rejoin) (3, 1 s, 30
//     s): machines a leader joins per round and its backoff per machine:
//     one answer merges the pools; a machine gone for good costs a request
//     per 30 s
//
// At 10,000 machines the servers' largest cost is the leases, all at the
// leader. What holds it down: renewals less often as the pool grows
// (lease.TimingFor: some 3,300 a second past 1,666 machines, so a dead
// machine's work moves within 10 s), each a line on a connection of its
// own (http_lease_stream.go) read and answered without reflection
// (lease_stream_wire.go), leadership confirmed in rounds shared by every
// renewal of 20 ms (checkGather), and a membership pass that repeats an
// unchanged one. What is left is the loopback TCP of a read and a write a
// renewal; taking the servers out of the stubs' pool is not built.
// While a large pool joins, every membership pass is a full one, a look at
// every machine: past 2,000 machines the passes are spaced by the pool's
// size (reconcileGapFor: 500 ms at 10,000), so that their cost stays a
// bounded share of the leader's CPU, a join or a leave seen that much
// later at most.
//
// # Joining the pool again
//
// When every server is away long enough, memberlist splits the pool for
// good: a restarted server refutes suspicion of itself only to the members
// it knows (the other servers), so the stubs declare every server dead and
// forget it 30 s later; members probe and push/pull only with live members;
// and a stub that joined its --join addresses only until its first success
// would not look again. The stubs then form one pool and the restarted
// servers another, and the leader takes every machine down 15 s after its
// election (absentGrace). So both sides look for the other, and either is
// enough:
//
//   - The stub (stub/rejoin.go) remembers the gossip address of every
//     server it has seen. While it sees no live server it joins its --join
//     addresses and those, at once and then every 0.5-4 s with jitter.
//     netmgr_stub_gossip_servers is how many servers it sees.
//   - The leader (server/rejoin), every pass, takes up to three machines
//     of the database that its gossip does not show alive, asks each stub
//     at its recorded API address for its gossip address (Facts.GossipAddr,
//     `GET /v1/facts`), and joins it, if the answer names that machine;
//     each machine backs off from 1 s to 30 s. So servers restarted at new
//     addresses, or stubs whose --join list is stale, are found too.
//
// A merge takes no machine down: a restarted server holds no claims about
// stubs, and the stubs' claims that servers are dead are refuted. With 3
// servers and 2 stubs, every server killed until the stubs had forgotten
// them and then restarted, the first job ran 0.01 s after the election
// (`netmgr-bench -only outage`), and no machine went down.
//
// # Gossip encryption
//
// Gossip is encrypted by memberlist with a keyring (Config.Keyring,
// GossipVerifyIncoming/Outgoing), read from a file of base64 keys whose
// first encrypts (client/pki/keyring.go). Reload (server and stub, on
// SIGHUP) makes the live keyring hold exactly the file's keys with
// pki.InstallKeys (package client/pki says in what order, and why). A node
// started without a keyring cannot start encrypting at run time (memberlist
// reads the keyring's presence at every packet but the config is not ours
// to swap); a restart is needed to turn encryption on. So `netmgr server`
// and `netmgr stub` with TLS refuse to start without a keyring
// (--gossip-keyring, or /etc/netmgr/tls/gossip.keyring if it exists):
// plaintext gossip would let whoever reaches the port claim members dead or
// alive, and the leader acts on a member's death. memberlist's refusals
// ("no installed keys could decrypt the message", "encryption is configured
// but remote state is not encrypted", ...) are recognised
// (pki.GossipKeyProblem) and logged as one plain warning per peer host a
// minute on both servers (whose other memberlist lines stay at debug) and
// stubs.
//
// # Who joins Raft
//
// Who joins Raft is decided by certificates, not gossip
// (server/raft_admit.go, server/membership). Anyone with the gossip key
// can gossip the server role and any Raft address. Before AddVoter, and before a bootstrapping
// server counts a peer toward --bootstrap-expect, the server dials the Raft
// address the member gossips over TLS and requires a server certificate
// whose CN is the member's name; so neither a stolen stub certificate, nor
// an insecure process, nor a process that gossips another server's Raft
// address under a new name gets in. The check runs in the background of the
// leader loop (a member behind a black-holed address costs one 3 s dial,
// not a stalled reconcile), is repeated every 2 s for a refused member, and
// is logged once a minute per member (admission lives on the Server, so
// leadership changes do not reset that). Servers already in the
// configuration are not checked again: the Raft layer's own certificate
// check covers every connection they make. The check applies only when Raft
// runs on the TLS layer; under --insecure (plain TCP) and on the tests'
// in-memory transport an address proves nothing and members are added
// unchecked.
//
// # Snapshots and restart time
//
// A server that comes back restores its newest snapshot and replays the
// Raft log written since, before it serves reads. --snapshot-interval (10
// s; hashicorp/raft's default is 120 s) is how often it checks whether
// 8,192 entries are new and compacts: with the default a busy server's log
// held up to 240 s of entries and a restart after 100,000 jobs took 32 s to
// serve. The price is a snapshot that often, which holds neither Applies
// nor reads back (fsm's doc, "Snapshots"): at 1M jobs Applies wait at most
// a chunk of 256 jobs' encoding.
//
// # How far one group goes
//
// A model for 10,000, 50,000 and 100,000 machines, from what was measured
// on a 2-core VM (doc/benchmark.md): what each part of one server group
// costs as the pool grows, and what breaks first.
//
//   - Lease renewals: every machine every 0.5 s up to 1,666 machines,
//     then every 0.3 ms per machine (3 s at 10,000; server/lease's
//     TimingFor), to the leader, each on the stub's lease stream: at most
//     some 3,300 a second up to 10,000 machines, where 20,000 at 0.5 s
//     would have cost 2.6-3.2 cores. 0.13-0.16 ms of the leader's CPU a
//     renewal within HTTP/2 (at rest, 0.49 cores at 5,000 and 0.56 at
//     10,000; target 0.3); on a connection of its own (client.LeaseUpgrade)
//     a fifth less (1,600 machines: 0.48-0.52 cores against 0.61-0.67),
//     the rest the connection's system calls, the grant and JSON: 0.37-0.42
//     cores measured at 10,000, warm, on a faster day of the same box
//     (doc/benchmark.md); read and answered without reflection, with
//     leadership checks gathered 20 ms, a fifth less again (2,000
//     machines, alternated: 0.47-0.50 to 0.38-0.39 cores). A renewal that fails asks each server once and
//     is retried after client.LeaseRetryWait (2 s at 10,000), so that a
//     pool whose leader died asks the survivors about as often as it
//     renews, and a server that knows of no leader holds a renewal up
//     to 0.8 s for one (lease_hold.go; Consul holds RPCs up to 7 s): one
//     request a stub an election. Even so, at 10,000 on 2 cores the
//     survivors' elections failed, starved. The interval cannot grow
//     further without slowing machine loss: the outage rule makes the
//     lease twice the interval plus 2 s, and a dead machine's work moves
//     9 s after its last renewal at 3 s. Past 10,000 the rate grows
//     again: 16,700 a second at 50,000 (2.2-2.7 cores), 33,000 at 100,000.
//     A connection per machine on the leader costs 0.1 MiB (RSS 1.1-1.3
//     GiB at 10,000, 234 MB of it the lease streams' goroutine stacks;
//     12 GiB at 100,000); each machine also keeps a warm
//     connection to every follower, so that a new leader need not
//     handshake with every machine (1-2 ms of CPU each: 10-20
//     core-seconds at 10,000), about 55 KiB each on a follower. So the
//     connections are spread: from --lease-relay-from machines each stub
//     renews on a follower's stream, which passes the leader its
//     renewals a batch per round trip (lease_relay.go), and the leader
//     grants each after the shared leadership check, ~8 us a renewal: at
//     10,000 the leader 0.18-0.22 cores and 246-573 MiB, each follower
//     0.12-0.15 cores (doc/benchmark.md, *Renewals relayed by the
//     followers*). A renewal's socket work, ~30 us, is paid by the
//     followers instead, so at 50,000 and 100,000 (16,700 and 33,000
//     renewals a second) each of 4 followers of a 5-server group pays
//     0.13 and 0.25 cores for it, the leader 0.13 and 0.26 for the grants,
//     and what breaks next is a follower's 25,000 connections at 100,000,
//     past this box's 20,000 descriptors.
//   - Gossip: each server's memberlist holds every machine, and a join is a
//     push/pull of a server's whole state (150-250 bytes a member: 2 MiB
//     a join at 10,000, 20 MiB at 100,000), so a pool starting at once
//     moves N² bytes through the servers. Each server probes one member a
//     second, so a dead machine is probed by gossip only every N/servers
//     seconds; machine loss is the lease's to find, which keeps its
//     seconds, and gossip's `down` becomes a cleanup. Past 10,000, the
//     machines' gossip must be split into segments that only the servers
//     join all of (Consul's network segments), or joins must not carry
//     the servers' state.
//   - The database: live jobs grow with slots and retention (the default
//     --job-retention-count keeps 100,000 finished). 1M live jobs
//     snapshot to 283 MiB in 10-12 s beside traffic and restore in
//     4.2-5.5 s; 100,000 machines of 4 slots with a queue of 10 per slot
//     keep about 4M, a snapshot near 1.1 GiB and a restart near 25 s, over
//     the 10 s target: at that size a restarted server must catch up from
//     a peer's snapshot it streams rather than read its own.
//   - The planner and the log: a pass costs what changed (a full pool
//     0.23 us a commit, a stuck backlog under 1 ms), a fill places about
//     10,000 instances a second in passes of 2,000, and every start is
//     three commits (Place, CHILD_REGISTER, CHILD_TERM), batched: hour-long
//     jobs on 100,000 machines of 4 slots end 111 a second, well within
//     the 5,000-8,000 submits a second measured; minute-long ones, 6,700
//     a second, are at that limit. End to end the leader's sends bound
//     it first: 32 requests to stubs in flight (dispatch's sendSlots),
//     about one Start each when a pass spreads 2,000 over as many
//     machines, each a handshake for a leader that never dialled the
//     stub, made 389 starts a second at 5,000 simulated machines and
//     1,263 at 1,000 (doc/benchmark.md, *Placing end to end*); 2,000
//     needs more in flight once connections are warm and Starts gathered
//     per machine across passes.
//
// A second group (federation, as the Prospero Resource Manager's many
// managers) takes the pool apart rather than the group: each machine's
// stub belongs to one group (its --servers), with that group's Raft log,
// leases and gossip, so a group's outage touches only its machines. What
// it needs on top: submits routed to a group (by queue, or a job manager
// asking each group's leader for an offer, as Prospero's did), one
// identity (the same CA, tokens every group honours), dependencies on a
// job of another group (its end read from that group's history stream),
// fair share from usage the groups exchange with bounded staleness, and
// netstatus reading every group. A job never moves between groups except
// by being submitted again.
package server
