package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/fsm/fsmscale"
)

// passQueues are the queues the pending jobs go to, in turn; the
// fsmscale database declares them.
var passQueues = []string{"", "batch", "short"}

// passState builds the database one scheduling pass runs over: fsmscale's
// pool of machines with a history of jobs (a few still running or
// queued), then pending jobs of perJob instances each, all queued. Each
// pending job runs on one architecture (6 in 10 x86_64, 3 aarch64, 1
// sparc); the even ones need the fpu key and every third asks 256 MB. It
// returns the FSM and how many instances are queued.
func passState(machines, history, pending, perJob int) (*fsm.FSM, int, error) {
	f := fsm.New()
	st, err := fsmscale.Build(f, fsmscale.Params{Machines: machines, Jobs: history})
	if err != nil {
		return nil, 0, err
	}
	index := st.Index
	at := time.Date(2025, time.April, 2, 9, 0, 0, 0, time.UTC)
	for j := range pending {
		arch := "x86_64"
		switch {
		case j%10 == 9:
			arch = "sparc"
		case j%10 >= 6:
			arch = "aarch64"
		}
		user := fmt.Sprintf("u%03d", j%37)
		spec := fsm.JobSpec{
			Name:     fmt.Sprintf("sweep-%d", j),
			Binaries: map[string]string{arch: "/home/" + user + "/bin/" + arch + "/sweep"},
			Args:     []string{"-n", "100"},
			Min:      perJob,
			Queue:    passQueues[j%len(passQueues)],
		}
		if j%2 == 0 {
			spec.Keys = []string{"fpu"}
		}
		if j%3 == 0 {
			spec.MemoryMB = 256
		}
		sub := fsm.Submit{At: at.Add(time.Duration(j) * time.Second), Owner: user, IdempotencyKey: fmt.Sprintf("sweep-%d", j), Spec: spec}
		index++
		if _, err := applyOne(f, index, fsm.SubmitType, sub); err != nil {
			return nil, 0, fmt.Errorf("pass state: %w", err)
		}
	}
	var queued int
	f.Read(func(v fsm.View) { queued = len(v.Queued()) })
	return f, queued, nil
}

// applyOne encodes and applies one command at index, returning its
// result or the error it was refused with.
func applyOne(f *fsm.FSM, index uint64, t fsm.MessageType, body any) (*fsm.Result, error) {
	data, err := fsm.Encode(t, body)
	if err != nil {
		return nil, err
	}
	res := f.Apply(&raft.Log{Type: raft.LogCommand, Index: index, Data: data}).(*fsm.Result)
	if res.Err != nil {
		return nil, fmt.Errorf("apply %v at %d: %w", t, index, res.Err)
	}
	return res, nil
}

// memSink is a raft.SnapshotSink into memory.
type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

// snapshotBytes persists f's snapshot into memory.
func snapshotBytes(f *fsm.FSM) ([]byte, error) {
	snap, err := f.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		return nil, err
	}
	return sink.Bytes(), nil
}
