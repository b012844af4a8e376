// Package raftnode is one server's Raft plumbing: Open starts
// hashicorp/raft on its transport and stores and hands back a Node.
//
// It owns:
//   - node.go: Open, Config and Node: Raft's configuration (timeouts,
//     snapshot interval), its stores (raft-boltdb/v2 on bbolt behind a
//     log cache, and file snapshots; or in memory for tests) and its
//     transport (TCP, TLS, or one the caller gives), which replicates one
//     AppendEntries at a time: hashicorp/raft's pipeline deadlocks on a
//     follower that refuses an append (maxRPCsInFlight).
//   - pace.go: the leader's heartbeat pace: while Config.RelaxedPace
//     allows, a leader takes a heartbeat timeout LeaderPaceFactor times
//     its followers', so it heartbeats half as often while they notice
//     its death as soon as before.
//   - tls.go: Raft's TLS stream layer, which lets only server certificates
//     of the cluster CA speak Raft, and the dial that checks a peer is one.
//   - admit.go: Admission and VerifyServer, the check that a would-be
//     server's Raft address shows its own server certificate.
//   - datadir.go: the check of raft.db and the snapshots before Raft opens
//     them, and the restore of the newest snapshot: a damaged file stops
//     the server with an error naming it (ErrDamagedDataDir).
//   - storehealth.go: Health, the record of failed writes to the Raft
//     store, which makes the server unhealthy.
//
// It does not own the state machine (package fsm, which Config.FSM
// gives), does not decide who joins or leaves the group (the server's
// bootstrap and membership watcher call Admission and VerifyServer, then
// change the configuration), and does none of the leader's duties: the
// server reads Node.LeaderCh and runs its leader loop. Nor does it watch
// how far the log lags the leader's commits (the server does, and tells
// Health with CaughtUp).
package raftnode
