package fsm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A snapshot is taken without stopping the world (doc.go, "Snapshots"):
// Snapshot copies, under the lock, what is small (the header, the
// database, the machines, reservations, tokens and pending mail) and
// registers a capture; Persist then encodes the jobs a chunk at a time
// holding FSM.write (not the read-write lock reads take), Applies running
// between the chunks. A job an Apply
// is about to change or remove while a capture runs is first copied into
// the capture (db.edit), so the encoder writes every job as it was at the
// snapshot's index: the bytes are those the whole state encoded at that
// index would give.

// Persist encodes at most persistChunkJobs jobs, or looks at
// persistChunkIDs job ids, per hold of FSM.write: about a millisecond of
// encoding, the longest an Apply waits for a running Persist. A waiting
// Apply holds no lock that reads take, so reads never wait for Persist.
// After each chunk Persist sleeps as long as the chunk took: it uses at
// most half a core, and the requests keep the rest (on a loaded machine
// a Persist that ran flat out doubled to quintupled their p99).
const (
	persistChunkJobs = 256
	persistChunkIDs  = 4096
)

// errSnapshotDone means Persist was called on a snapshot already
// persisted or released: its copies are no longer kept.
var errSnapshotDone = errors.New("snapshot already persisted or released")

// capture is a snapshot being taken: which jobs it holds, and the copies
// of those changed since its index. Its fields are read and changed
// holding FSM.write.
type capture struct {
	index     uint64
	nextJobID uint64 // the jobs it holds have ids below this
	// through is the id below which the encoder has written every job:
	// a change to such a job needs no copy.
	through uint64
	// before holds, for each job changed or removed since index, its
	// copy as it was at index.
	before map[uint64]*Job
	copied int // how many copies it took
}

// edit notes that j is about to change (or be removed): every capture
// running that holds j and has not written it yet keeps a copy of it as
// it is now, once. Every Apply path calls it before it changes a job
// that already existed; a job created by the entry being applied needs
// none.
func (d *db) edit(j *Job) {
	for _, c := range d.snaps {
		if j.ID < c.through || j.ID >= c.nextJobID {
			continue
		}
		if _, ok := c.before[j.ID]; !ok {
			c.before[j.ID] = cloneJob(j)
			c.copied++
		}
	}
}

// cloneJob returns a copy of j that shares nothing Apply changes: the
// spec, which never changes after Submit, is shared; the instances, their
// histories and leftovers, the cron record and the outputs are copied.
func cloneJob(j *Job) *Job {
	c := *j
	c.Instances = slices.Clone(j.Instances)
	for i := range c.Instances {
		in := &c.Instances[i]
		in.History = slices.Clone(in.History)
		in.Leftovers = slices.Clone(in.Leftovers)
		in.GPUs = slices.Clone(in.GPUs)
		if in.Checkpoint != nil {
			ck := *in.Checkpoint
			ck.Files = slices.Clone(ck.Files)
			in.Checkpoint = &ck
		}
	}
	if j.Cron != nil {
		cs := *j.Cron
		cs.Runs = slices.Clone(cs.Runs)
		cs.Skips = slices.Clone(cs.Skips)
		c.Cron = &cs
	}
	c.Outputs = slices.Clone(j.Outputs)
	for i := range c.Outputs {
		o := &c.Outputs[i]
		o.Files = slices.Clone(o.Files)
		o.Lost = slices.Clone(o.Lost)
	}
	return &c
}

// changedAfter reports whether j or one of its instances records a
// change after index: a job the encoder finds so without a copy was
// changed by an Apply path that did not call edit.
func (j *Job) changedAfter(index uint64) bool {
	if j.ModifyIndex > index {
		return true
	}
	for i := range j.Instances {
		if j.Instances[i].ModifyIndex > index {
			return true
		}
	}
	return false
}

// snapshot is the state at one index, being written by Persist: the
// small records copied, and the jobs read from the live state through
// the capture.
type snapshot struct {
	f        *FSM
	d        *db // the state it was taken of (Restore may replace f.d)
	c        *capture
	once     sync.Once // ends the capture
	header   snapshotHeader
	database Database
	machines []Machine
	reserved []Reservation
	tokens   []Token
	mails    []Mail
}

// Snapshot takes the snapshot's small records and starts its capture
// under the lock, in time proportional to the machines and not to the
// jobs; Persist encodes and writes it (snapshot_capture.go).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.write.Lock()
	defer f.write.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.d.capture(f), nil
}

// capture copies the small records and registers a capture of the jobs.
func (d *db) capture(f *FSM) *snapshot {
	s := &snapshot{f: f, d: d, database: d.database, header: snapshotHeader{
		Format:    snapshotFormat,
		Version:   SnapshotVersion,
		Index:     d.index,
		NextJobID: d.nextJobID,
		Machines:  len(d.machines),
		Jobs:      len(d.jobs),

		DatabaseIndex:     d.databaseIndex,
		Reservations:      len(d.reservations),
		NextReservationID: d.nextReservationID,
		Tokens:            len(d.tokens),
		Mails:             len(d.mails),
		FairShare:         d.share.record(),
		Prime:             d.primeRecords(),
		Policy:            d.policy, // replaced whole, never changed in place
	}}
	// A machine's facts' slices and map are replaced whole (StubJoin
	// clones them), never changed in place: a copy of the struct is the
	// machine as it is now.
	ms := sortedMachines(d.machines)
	s.machines = make([]Machine, len(ms))
	for i, m := range ms {
		s.machines[i] = *m
	}
	for _, r := range d.sortedReservations() {
		c := *r
		c.Machines = slices.Clone(r.Machines)
		s.reserved = append(s.reserved, c)
	}
	for _, t := range d.sortedTokens() {
		s.tokens = append(s.tokens, *t)
	}
	for _, m := range d.sortedMails() {
		s.mails = append(s.mails, copyMail(m))
	}
	s.c = &capture{index: d.index, nextJobID: d.nextJobID, through: 1, before: make(map[uint64]*Job)}
	d.snaps = append(d.snaps, s.c)
	return s
}

// end stops the capture: Applies copy nothing more for it.
func (s *snapshot) end() {
	s.once.Do(func() {
		s.f.write.Lock()
		defer s.f.write.Unlock()
		s.f.mu.Lock()
		defer s.f.mu.Unlock()
		s.d.snaps = slices.DeleteFunc(s.d.snaps, func(c *capture) bool { return c == s.c })
		s.c.before = nil
	})
}

// Persist writes the header and the database as JSON lines, then the
// binary records, encoding the jobs a chunk at a time.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) write(w io.Writer) error {
	defer s.end()
	if !s.live() {
		return errSnapshotDone
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(s.header); err != nil {
		return err
	}
	if err := enc.Encode(&s.database); err != nil {
		return err
	}
	e := newEncoder()
	for i := range s.machines {
		e.machine(&s.machines[i])
	}
	if err := e.drain(bw); err != nil {
		return err
	}
	written := 0
	for id := uint64(1); id < s.c.nextJobID; {
		start := time.Now()
		n, next, err := s.encodeJobs(e, id)
		if err != nil {
			return err
		}
		// Half a core at most: for as long again as the chunk took, the
		// requests have the core to themselves (and an Apply its unlock
		// woke goes before the next chunk).
		time.Sleep(time.Since(start))
		written += n
		id = next
		if hook := s.f.persistHook; hook != nil {
			hook(written)
		}
		if err := e.drain(bw); err != nil {
			return err
		}
	}
	if written != s.header.Jobs {
		return fmt.Errorf("wrote %d jobs, the header announces %d", written, s.header.Jobs)
	}
	s.end() // the jobs are written: Applies need copy nothing more
	for i := range s.reserved {
		e.reservation(&s.reserved[i])
	}
	for i := range s.tokens {
		e.token(&s.tokens[i])
	}
	for i := range s.mails {
		e.mail(&s.mails[i])
	}
	if err := e.drain(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// live reports whether the capture still runs.
func (s *snapshot) live() bool {
	s.f.write.Lock()
	defer s.f.write.Unlock()
	return s.c.before != nil
}

// encodeJobs encodes, holding the FSM's write mutex (Applies wait; reads
// do not), the jobs of the snapshot from id on, up to a chunk's worth,
// and returns how many it wrote and the id to go on from. A job changed
// since the snapshot's index is written from its copy.
func (s *snapshot) encodeJobs(e *encoder, id uint64) (int, uint64, error) {
	s.f.write.Lock()
	defer s.f.write.Unlock()
	if hook := s.f.chunkHook; hook != nil {
		defer hook()
	}
	n, most := 0, persistChunkJobs
	if s.f.persistChunk > 0 {
		most = s.f.persistChunk
	}
	for scanned := 0; id < s.c.nextJobID && n < most && scanned < persistChunkIDs; scanned++ {
		j, copied := s.c.before[id]
		if !copied {
			j = s.d.jobs[id]
		}
		if j != nil {
			if !copied && j.changedAfter(s.c.index) {
				return n, id, fmt.Errorf("job %d changed at index %d, after the snapshot's %d, without a copy", id, j.ModifyIndex, s.c.index)
			}
			e.job(j)
			n++
		}
		id++
	}
	s.c.through = id
	return n, id, nil
}

// Release ends the capture, if Persist has not.
func (s *snapshot) Release() { s.end() }

// drain writes everything encoded so far to w and empties the encoder,
// keeping its symbols (and a buffer to reuse).
func (e *encoder) drain(w io.Writer) error {
	for _, c := range e.chunks {
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	e.chunks = nil
	_, err := w.Write(e.buf)
	e.buf = e.buf[:0]
	return err
}
