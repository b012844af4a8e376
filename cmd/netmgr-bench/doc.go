// Command netmgr-bench starts a local cluster of real netmgr processes
// (3 servers, 2 stubs, on 127.0.0.1, Raft log fsynced as raft-boltdb does
// by default) and measures how fast the server group turns a submit into a
// running process:
//
//   - latency: N sequential single-instance jobs, each timed from Submit to
//     the moment WaitJob(started) returns, i.e. the CHILD_REGISTER is
//     committed;
//   - throughput: C concurrent submitters doing the same for a fixed time,
//     reported as jobs registered per second in 1 s windows, plus the
//     latency each submitter saw under that load.
//
// Usage:
//
//	netmgr-bench [-netmgr bin/netmgr] [-n 300] [-c 32] [-duration 10s] [-json]
//
// BENCH_QUICK=1 in the environment shortens the defaults (-n 60,
// -duration 3s). Without -netmgr the binary is built into a temp dir.
package main
