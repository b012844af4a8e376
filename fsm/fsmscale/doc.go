// Package fsmscale builds a large, realistic netmgr database by applying
// real commands (StubJoin, LoadDatabase, Submit, Place, ChildRegister,
// ChildTerm, Kill) to an fsm.FSM in process, for the scale benchmarks:
// cmd/netmgr-bench's scale and pass suites and fsm's snapshot benchmarks.
//
// It is deterministic: the same Params give the same commands, so the same
// state and the same snapshot bytes. It is not used by the servers.
package fsmscale
