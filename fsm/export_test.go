package fsm

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/hashicorp/raft"
)

// EncodeAtOnce encodes f's state as Snapshot and Persist did before
// snapshots were captured: every record encoded under the read lock in one
// go, in the same order. The tests hold Persist's bytes to it.
func EncodeAtOnce(f *FSM) []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	d := f.d
	h := snapshotHeader{
		Format: snapshotFormat, Version: SnapshotVersion, Index: d.index, NextJobID: d.nextJobID,
		Machines: len(d.machines), Jobs: len(d.jobs), DatabaseIndex: d.databaseIndex,
		Reservations: len(d.reservations), NextReservationID: d.nextReservationID,
		Tokens: len(d.tokens), Mails: len(d.mails), FairShare: d.share.record(), Prime: d.primeRecords(),
	}
	e := newEncoder()
	for _, m := range sortedMachines(d.machines) {
		e.machine(m)
	}
	ids := make([]uint64, 0, len(d.jobs))
	for id := range d.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.job(d.jobs[id])
	}
	for _, r := range d.sortedReservations() {
		e.reservation(r)
	}
	for _, t := range d.sortedTokens() {
		e.token(t)
	}
	for _, m := range d.sortedMails() {
		e.mail(m)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(h); err != nil {
		panic(err)
	}
	if err := enc.Encode(&d.database); err != nil {
		panic(err)
	}
	for _, c := range e.finish() {
		buf.Write(c)
	}
	return buf.Bytes()
}

// SetPersistHook makes f's Persist encode chunk jobs at a time (0: the
// default) and call hook between two chunks, without the lock, with the
// jobs written so far. Set it before the Persist it is for starts.
func SetPersistHook(f *FSM, chunk int, hook func(jobs int)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.persistChunk, f.persistHook = chunk, hook
}

// SetChunkHook makes f's Persist call hook while it holds the FSM's write
// mutex in the middle of its chunks of jobs (nil: no hook).
func SetChunkHook(f *FSM, hook func()) {
	f.write.Lock()
	defer f.write.Unlock()
	f.chunkHook = hook
}

// SnapshotCopies returns how many jobs snap's capture copied because an
// Apply changed them while it ran.
func SnapshotCopies(snap raft.FSMSnapshot) int {
	s := snap.(*snapshot)
	s.f.mu.RLock()
	defer s.f.mu.RUnlock()
	return s.c.copied
}
