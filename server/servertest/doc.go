// Package servertest starts netmgr clusters for tests and benchmarks: in
// process on Raft's in-memory transport (inproc.go), with in-process stubs
// that fork real jobs, or as real netmgr processes on loopback (process.go).
// Waits poll with deadlines; nothing here sleeps and hopes.
package servertest
