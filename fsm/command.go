package fsm

import (
	"encoding/json"
	"fmt"
	"time"
)

// MessageType identifies a command in the Raft log. Values are assigned by
// hand, append-only: a retired type keeps its number as a deprecated
// constant so old logs still decode.
type MessageType uint8

// The commands. Never renumber, never reuse.
const (
	StubJoinType      MessageType = 1
	StubLeaveType     MessageType = 2
	SubmitType        MessageType = 3
	PlaceType         MessageType = 4
	ChildRegisterType MessageType = 5
	ChildTermType     MessageType = 6
	KillType          MessageType = 7
)

// IgnoreUnknownFlag marks a command that a server which does not know its
// type may skip instead of stopping. Commands whose loss would make replicas
// diverge must not set it.
const IgnoreUnknownFlag MessageType = 128

// String names the type for logs and errors.
func (t MessageType) String() string {
	switch t &^ IgnoreUnknownFlag {
	case StubJoinType:
		return "StubJoin"
	case StubLeaveType:
		return "StubLeave"
	case SubmitType:
		return "Submit"
	case PlaceType:
		return "Place"
	case ChildRegisterType:
		return "ChildRegister"
	case ChildTermType:
		return "ChildTerm"
	case KillType:
		return "Kill"
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// Encode returns the log entry for a command: its type byte then its JSON body.
func Encode(t MessageType, body any) ([]byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %v: %w", t, err)
	}
	out := make([]byte, 0, len(data)+1)
	out = append(out, byte(t))
	return append(out, data...), nil
}

// MachineFacts is what a stub reports about its machine.
type MachineFacts struct {
	Name     string   `json:"name"`
	Arch     string   `json:"arch"`
	CPUs     int      `json:"cpus"`
	MemoryMB int64    `json:"memory_mb"`
	Mounts   []string `json:"mounts,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Addr     string   `json:"addr"`
}

// StubJoin commits a machine to the pool, or brings a known one back up
// with fresh facts.
type StubJoin struct {
	At      time.Time    `json:"at"`
	Machine MachineFacts `json:"machine"`
}

// StubLeave takes a machine out of the pool; what ran there is lost.
type StubLeave struct {
	At      time.Time `json:"at"`
	Machine string    `json:"machine"`
	Reason  string    `json:"reason"`
}

// JobSpec is the job as the log records it.
type JobSpec struct {
	Name     string            `json:"name,omitempty"`
	Binaries map[string]string `json:"binaries"`
	Args     []string          `json:"args,omitempty"`
	Env      []string          `json:"env,omitempty"`
	Min      int               `json:"min,omitempty"`
}

// Submit creates a job. Owner is the identity the server authenticated (or,
// today, the one the client named); commands never learn how it was proven.
type Submit struct {
	At             time.Time `json:"at"`
	Owner          string    `json:"owner"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Spec           JobSpec   `json:"spec"`
}

// Assignment places one attempt of an instance on a machine, running the
// binary of Key.
type Assignment struct {
	JobID    uint64 `json:"job_id"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	Machine  string `json:"machine"`
	Key      string `json:"key"`
}

// Place is the scheduler's decision for a batch of instances, planned
// against the state at PlannedAtIndex. Apply re-checks every assignment.
type Place struct {
	At             time.Time    `json:"at"`
	PlannedAtIndex uint64       `json:"planned_at_index"`
	Assignments    []Assignment `json:"assignments"`
}

// ChildRegister is the paper's CHILD_REGISTER: an attempt started.
type ChildRegister struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	PID      int       `json:"pid"`
}

// ChildTerm is the paper's CHILD_TERM: an attempt ended. Error is set when
// the binary could not be started.
type ChildTerm struct {
	At       time.Time `json:"at"`
	JobID    uint64    `json:"job_id"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt"`
	Machine  string    `json:"machine"`
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	Error    string    `json:"error,omitempty"`
	UserMS   int64     `json:"user_ms,omitempty"`
	SysMS    int64     `json:"sys_ms,omitempty"`
	MaxRSSKB int64     `json:"max_rss_kb,omitempty"`
}

// Kill ends a job: queued instances never run, placed and running ones are
// marked for the leader to signal.
type Kill struct {
	At     time.Time `json:"at"`
	JobID  uint64    `json:"job_id"`
	By     string    `json:"by"`
	Signal string    `json:"signal,omitempty"`
}
