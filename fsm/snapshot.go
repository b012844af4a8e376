package fsm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// SnapshotVersion is the snapshot format version: a JSON header line and
// a JSON database line, then the machine, job, reservation and token
// records in a binary form (snapshot_codec.go) with repeated strings
// stored once. Restore refuses every version it does not read. 1.0 writes
// and reads 4; 5 adds the machine's Unhealthy to its record
// (MachineHealth); 6 adds the token records (TokenIssue); 7 adds the
// job's dependencies (after=, afterok=, afternotok=) to its record; 8
// adds the machine's Asleep to its record (MachineAsleep); 9 adds the
// job's working directory (JobSpec.Dir, netexec --chdir), its cron
// options, a cron job's schedule record and a run's cron job and scheduled
// time (CronFire), and the job's Mail and MailTypes to its record, the
// pending mail records (MailSent), and the owner-policy settings of mtypes,
// machines and queues to the database line; 10 adds the job's own time
// limit and warning (TimeLimitSeconds, WarnSignal, WarnLeadSeconds) to its
// record and a queue's kill grace to the database line; 11 adds the spec's
// Gang (SubmitGang) to the job's record; 12 adds the job's copy_in and
// copy_out options and its kept outputs (OutputsKept) to its record; 13
// adds the fair-share usage (FairShareStart) to the header and the
// accounts, shares, half-life and per-user queue limits to the database
// line; 14 adds the machine's detected GPUs and disk and the job's
// resource requests and its instances' GPUs to their records, and the
// licences to the database line; 15 adds the queues' prime-time states
// (PrimeTimeSwitch) and the site policy script (PolicyLoad) to the
// header, the job's checkpoint options and its instances' newest kept
// checkpoints (CheckpointKept) and each instance's PreemptedBy and
// Preempt (Preempt) and the spec's Priority to the job's record, and
// the queues' prime-time declarations, preempt= and the interactive
// queue's mark to the database line. This build writes 15 and reads 4 to 15; a future
// version must keep a reader for them all.
const SnapshotVersion = 15

// oldestSnapshotVersion is the oldest version Restore reads, 1.0's.
const oldestSnapshotVersion = 4

// snapshotHeader opens every snapshot, as one JSON line.
type snapshotHeader struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Index     uint64 `json:"index"`
	NextJobID uint64 `json:"next_job_id"`
	Machines  int    `json:"machines"`
	Jobs      int    `json:"jobs"`
	// DatabaseIndex is the index of the last LoadDatabase.
	DatabaseIndex uint64 `json:"database_index,omitempty"`
	// Reservations is the number of reservation records after the jobs.
	Reservations int `json:"reservations,omitempty"`
	// NextReservationID is the ID the next Reserve gets.
	NextReservationID uint64 `json:"next_reservation_id,omitempty"`
	// Tokens is the number of token records after the reservations;
	// since version 6.
	Tokens int `json:"tokens,omitempty"`
	// Mails is the number of pending mail records after the tokens;
	// since version 9.
	Mails int `json:"mails,omitempty"`
	// FairShare is the fair-share usage (fairshare.go), absent while fair
	// share is off; since version 13.
	FairShare *fairShareRecord `json:"fair_share,omitempty"`
	// Prime is the queues' prime-time states (primetime.go), by queue
	// name, absent when none was switched; since version 15.
	Prime []primeRecord `json:"prime,omitempty"`
	// Policy is the site policy script (PolicyLoad), absent when none;
	// since version 15.
	Policy *Policy `json:"policy,omitempty"`
}

const snapshotFormat = "netmgr-fsm"

// ErrSnapshotFormat means a snapshot is not one this version can restore.
var ErrSnapshotFormat = errors.New("unrecognised snapshot")

// Restore replaces the whole database with the snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	d, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.write.Lock()
	f.mu.Lock()
	d.owedSends = f.d.owedSends + 1 // a new state may owe anything
	var out []Applied
	if f.d.out != nil {
		d.out = &outbox{}
		out = []Applied{{Index: d.index, Restored: true}}
	}
	f.d = d
	close(f.watch)
	f.watch = make(chan struct{})
	f.mu.Unlock()
	f.write.Unlock()
	f.record(out)
	return nil
}

func readSnapshot(r io.Reader) (*db, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var h snapshotHeader
	if err := readLine(br, &h); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	if err := checkHeader(&h); err != nil {
		return nil, err
	}
	d := newDB()
	d.index, d.nextJobID = h.Index, h.NextJobID
	if err := readLine(br, &d.database); err != nil {
		return nil, fmt.Errorf("read database: %w", err)
	}
	d.databaseIndex = h.DatabaseIndex
	if h.FairShare != nil && h.Version < 13 {
		return nil, fmt.Errorf("read header: %w: version %d snapshot holds fair-share usage", errCorrupt, h.Version)
	}
	d.share.restore(h.FairShare)
	if len(h.Prime) > 0 && h.Version < 15 {
		return nil, fmt.Errorf("read header: %w: version %d snapshot holds prime-time states", errCorrupt, h.Version)
	}
	d.restorePrime(h.Prime)
	if h.Policy != nil && h.Version < 15 {
		return nil, fmt.Errorf("read header: %w: version %d snapshot holds a site policy", errCorrupt, h.Version)
	}
	d.policy = h.Policy
	d.nextReservationID = max(h.NextReservationID, 1)
	dec := newDecoder(br)
	dec.version = h.Version
	if err := readBinaryRecords(d, &h, dec); err != nil {
		return nil, err
	}
	d.reindex()
	return d, nil
}

// checkHeader refuses a snapshot this build does not read, with an error
// wrapping ErrSnapshotFormat that says what to do about it.
func checkHeader(h *snapshotHeader) error {
	switch {
	case h.Format != snapshotFormat:
		return fmt.Errorf("%w: format %q, want %q", ErrSnapshotFormat, h.Format, snapshotFormat)
	case h.Version >= 1 && h.Version < oldestSnapshotVersion:
		return fmt.Errorf("%w: snapshot version %d was written by a pre-release build; this build reads versions %d to %d: move the data directory aside",
			ErrSnapshotFormat, h.Version, oldestSnapshotVersion, SnapshotVersion)
	case h.Version > SnapshotVersion:
		return fmt.Errorf("%w: snapshot version %d was written by a newer build; this build reads versions %d to %d: run a build that reads it",
			ErrSnapshotFormat, h.Version, oldestSnapshotVersion, SnapshotVersion)
	case h.Version < oldestSnapshotVersion:
		return fmt.Errorf("%w: snapshot version %d, this build reads versions %d to %d", ErrSnapshotFormat, h.Version, oldestSnapshotVersion, SnapshotVersion)
	}
	return nil
}

// readLine decodes one JSON line into v.
func readLine(br *bufio.Reader, v any) error {
	line, err := br.ReadBytes('\n')
	if err != nil && (err != io.EOF || len(line) == 0) {
		return err
	}
	return json.Unmarshal(line, v)
}

// maxPresized bounds the size hint a header's counts give the maps, so
// that a corrupt header cannot make Restore allocate without bound.
const maxPresized = 1 << 22

// jobArena is how many jobs a restore allocates at once.
const jobArena = 1024

// readBinaryRecords reads the machine, job, reservation, (from version
// 6) token and (from version 9) mail records of a version 4 to 11 snapshot
// (dec.version says which); the stream must end after them.
func readBinaryRecords(d *db, h *snapshotHeader, dec *decoder) error {
	if h.Machines < 0 || h.Jobs < 0 || h.Reservations < 0 || h.Tokens < 0 || h.Mails < 0 {
		return fmt.Errorf("read records: %w: negative counts in the header", errCorrupt)
	}
	if h.Tokens > 0 && h.Version < 6 {
		return fmt.Errorf("read records: %w: version %d snapshot announces tokens", errCorrupt, h.Version)
	}
	if h.Mails > 0 && h.Version < 9 {
		return fmt.Errorf("read records: %w: version %d snapshot announces mail", errCorrupt, h.Version)
	}
	d.machines = make(map[string]*Machine, min(h.Machines, maxPresized))
	d.machinesSorted.Store(nil)
	for range h.Machines {
		m := new(Machine)
		if dec.machine(m); dec.err != nil {
			return fmt.Errorf("read machine: %w", dec.err)
		}
		d.machines[m.Name] = m
	}
	d.jobs = make(map[uint64]*Job, min(h.Jobs, maxPresized))
	var chunk []Job
	for i := range h.Jobs {
		// Jobs are allocated jobArena at a time: a million allocations
		// fewer, for a state that never removes a job.
		if len(chunk) == 0 {
			chunk = make([]Job, min(h.Jobs-i, jobArena))
		}
		j := &chunk[0]
		chunk = chunk[1:]
		if dec.job(j); dec.err != nil {
			return fmt.Errorf("read job: %w", dec.err)
		}
		d.jobs[j.ID] = j
	}
	for range h.Reservations {
		r := new(Reservation)
		if dec.reservation(r); dec.err != nil {
			return fmt.Errorf("read reservation: %w", dec.err)
		}
		d.reservations[r.ID] = r
	}
	for range h.Tokens {
		t := new(Token)
		if dec.token(t); dec.err != nil {
			return fmt.Errorf("read token: %w", dec.err)
		}
		d.tokens[t.ID] = t
	}
	for range h.Mails {
		m := new(Mail)
		if dec.mail(m); dec.err != nil {
			return fmt.Errorf("read mail: %w", dec.err)
		}
		d.mails[m.ID] = m
	}
	if !dec.atEnd() {
		return fmt.Errorf("read records: %w: data after the last record", errCorrupt)
	}
	return nil
}
