// Package simpool runs many simulated machines in one process for `netmgr
// sim`, cheaply enough that 10,000 fit on a small host, each speaking to
// the servers as a real stub does, so that the servers cannot tell.
//
// # What is real
//
// Each machine has what the servers see of a stub, its own:
//   - name and stub certificate (the caller's Config.TLS), used both ways:
//     its API listener requires a cluster certificate and takes Starts and
//     Signals from server certificates only; its clients present it;
//   - API listener on its own address: POST /v1/starts (idempotent per
//     attempt, answered with the attempt's CHILD_REGISTER, a restartable
//     Start refused with 409 outside the lease or below the machine index
//     of the last renewal), POST /v1/signal, GET /v1/facts, GET /v1/health;
//   - lease keeper (lease.go): renewals at the servers' RenewMS through a
//     client.Client hedged and led as the stub's (stub/servers.go), the
//     facts with the first renewal and whenever an answer asks, the token
//     echoed with its age (none while it vouches after an expiry), the
//     load when the servers take it; a lease that runs out SIGKILLs the
//     restartable attempts (ReasonLeaseExpired) unless the pool covers
//     them (outage.go);
//   - outbox and sender (sender.go): when an attempt ends, its REGISTER
//     again and its TERM are queued and sent (POST /v1/children) one
//     request at a time, so in order per attempt, again after a backoff
//     of 100 ms doubling to 2 s until a server answers; an event a server
//     refuses is dropped, a batch refused as a whole is sent one by one;
//   - gossip member (gossip.go, wire.go): a UDP socket and a TCP listener
//     on its gossip address that speak memberlist v0.6.0's protocol, as a
//     memberlist.Memberlist with netmgr's configuration would
//     (internal/gossip: DefaultLANConfig, no compression, no label, the
//     keyring's first key encrypting with GossipVerifyIncoming and
//     Outgoing). It joins with a push/pull of its own state (Join set)
//     with one join address (memberlist's Join push/pulls with every one:
//     see Machine.join for why not), answers pings
//     (UDP, and TCP, memberlist's fallback) with acks, carries out indirect probes for others (ping the target, forward
//     its ack, or a nack after the probe timeout), answers a push/pull
//     with its own state, and refutes a suspect or dead message about
//     itself, or such a state in a push/pull (a server's rejoin), with an
//     alive message of a higher incarnation, as memberlist's refute does.
//     Packets carry memberlist's CRC and are encrypted (AES-GCM,
//     encryption version 1) as memberlist does;
//     streams are framed and sealed as its encryptLocalState does.
//     Compressed messages are read. A server probing it, suspecting it
//     and declaring it dead goes through memberlist's own code.
//
// # What is shared or simulated
//
//   - No member list. A member gossips nothing of its own: it sends no
//     probes, no gossip rounds and no periodic push/pull. A real stub's
//     member list holds the whole pool (O(N) memory and probes per stub,
//     O(N²) in all); the servers' failure detection does not need it.
//     Where memberlist would broadcast a refutation to the pool, the
//     member sends it to its accuser and to the join addresses (the
//     servers). News about other members that a machine hears (alive,
//     suspect, dead) the pool relays to the servers, once per news for the
//     whole pool: in a real pool every member passes gossip on to random
//     members, and without the relay the simulated members would swallow
//     what the servers gossip to them, leaving the servers' views to
//     converge by chance; one hop to the servers stands in for the
//     epidemic (faster than a real pool's few rounds). The servers' probes
//     and gossip find the member among their own; indirect probes they
//     ask of it are real.
//   - The servers' addresses are learned once for the pool: the first
//     join decodes the state the server sends back and keeps the members
//     whose metadata says server; alive messages any machine hears
//     update them (a new leader's metadata). The other machines' joins
//     read the answer without decoding it.
//   - One process: one Go runtime and its timers, one http.Server whose
//     handler finds the machine by the connection, the host's facts
//     (stub.SimulatedFacts) for every machine, the executable check of a
//     job's binary cached per binary. Each machine listens on sockets of
//     its own, or (Config.Shared, `netmgr sim --own-address`) all share
//     one API listener, one gossip listener and one gossip UDP socket
//     bound to every address (shared.go), each machine on a loopback
//     address of its own, its traffic told apart by the address it was
//     sent to (IP_PKTINFO for UDP, which also sends from the machine's
//     address): 10,000 machines with sockets of their own need 30,000
//     open files, and a container's limit (20,000 here, which even root
//     cannot raise) does not allow it.
//   - A machine holds at most one connection to each server (HTTP/2
//     carries its concurrent requests), and a lease stream with each,
//     the followers' kept open as a stub keeps them
//     (client.WithWarmConnections); a real stub means to hold one, but its
//     transport dials again for every renewal while a slow server's
//     handshake hangs, which for 10,000 machines in one process piled up
//     thousands of pending handshakes. A pool whose connections the
//     open-file limit cannot hold (10,000 machines here need 40,000)
//     keeps one to the leader only (Config.ColdServers), closing any
//     other after 5 s idle.
//   - A few machines shake hands at once (handshakesAtOnce; a lease
//     stream's connection, streamHandshakesAtOnce), as each real machine
//     has a CPU of its own: thousands at once on a few shared cores
//     finish none within the server's 10 s.
//   - Jobs are timers: a job gets a unique fake pid above the kernel's
//     largest, runs for Config.RunTime (or its run limit: TERM with the
//     limit's Reason) and exits 0. A signal that kills ends it with
//     128+signal; STOP, CONT and the signals ignored by default leave it
//     running (no pause is simulated), and a grace then SIGKILLs it.
//   - Nothing is durable: the outbox, the attempt records and the exec
//     dirs of a real stub are not kept (an ended attempt is remembered 10
//     minutes for repeated Starts). No supervisor, cgroups, copy_in or
//     copy_out, prologue, health checks, owner policy or job output.
//   - The outage ride-out's witness is shared (outage.go): each machine
//     keeps and states its lease as a stub does (GET /v1/outage), but the
//     tree of witness rounds a real pool walks over HTTP is one in-process
//     tally of every live machine's statement, every 0.1 s while one may
//     need cover; a machine whose lease ran out keeps its restartable
//     attempts while the last tally found most of its pool cut off too,
//     and stops them otherwise. A real stub among them asking for cover
//     (POST /v1/outage/witness, GET /v1/outage/tally) is answered from the
//     machines' statements made after it asked (its process's machines
//     only); the pool's own tallies leave real stubs out, which only
//     makes its machines stop sooner. A pool split over processes is
//     told of machines of each other process (Pool.SetOutagePeers) and
//     adds their processes' tallies, over HTTP, to each round.
//
// Kill (Pool.Kill) cuts a machine off as a power cut would: its sockets
// close, its lease lapses, its jobs vanish and nothing more is reported,
// so that the servers' machine-loss path can be measured. Close has every
// machine leave as a stub shutting down cleanly does (metadata Leaving,
// then a dead message from itself) before stopping them.
package simpool
