package fsm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// SnapshotVersion is the snapshot format version. Restore refuses newer
// versions rather than misread them. Version 2 added the database record
// after the header; version 1 snapshots restore with an empty database.
// Version 3 added reservation records after the jobs.
const SnapshotVersion = 3

// snapshotHeader opens every snapshot.
type snapshotHeader struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Index     uint64 `json:"index"`
	NextJobID uint64 `json:"next_job_id"`
	Machines  int    `json:"machines"`
	Jobs      int    `json:"jobs"`
	// DatabaseIndex is the index of the last LoadDatabase (version 2).
	DatabaseIndex uint64 `json:"database_index,omitempty"`
	// Reservations and NextReservationID (version 3).
	Reservations      int    `json:"reservations,omitempty"`
	NextReservationID uint64 `json:"next_reservation_id,omitempty"`
}

const snapshotFormat = "netmgr-fsm"

// ErrSnapshotFormat means a snapshot is not one this version can restore.
var ErrSnapshotFormat = errors.New("unrecognised snapshot")

// snapshot is a point-in-time copy of the records, written by Persist.
type snapshot struct {
	header       snapshotHeader
	database     Database
	machines     []Machine
	jobs         []Job
	reservations []Reservation
}

// Snapshot copies the records under the lock; Persist does the I/O.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.d.copyRecords(), nil
}

func (d *db) copyRecords() *snapshot {
	s := &snapshot{header: snapshotHeader{
		Format:    snapshotFormat,
		Version:   SnapshotVersion,
		Index:     d.index,
		NextJobID: d.nextJobID,
		Machines:  len(d.machines),
		Jobs:      len(d.jobs),

		DatabaseIndex:     d.databaseIndex,
		Reservations:      len(d.reservations),
		NextReservationID: d.nextReservationID,
	}}
	for _, r := range d.sortedReservations() {
		s.reservations = append(s.reservations, *r)
	}
	// Declarations are replaced whole by LoadDatabase, never changed in
	// place, so sharing them with the live state is safe.
	s.database = d.database
	for _, m := range sortedMachines(d.machines) {
		s.machines = append(s.machines, *m)
	}
	for _, j := range sortedJobs(d.jobs) {
		c := *j
		c.Instances = append([]Instance(nil), j.Instances...)
		s.jobs = append(s.jobs, c)
	}
	return s
}

// Persist writes the header, then one JSON line per machine, then one per
// job. The record slices are never shared with the live state.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(s.header); err != nil {
		return err
	}
	if err := enc.Encode(&s.database); err != nil {
		return err
	}
	for i := range s.machines {
		if err := enc.Encode(&s.machines[i]); err != nil {
			return err
		}
	}
	for i := range s.jobs {
		if err := enc.Encode(&s.jobs[i]); err != nil {
			return err
		}
	}
	for i := range s.reservations {
		if err := enc.Encode(&s.reservations[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Release is a no-op: the copy is garbage collected.
func (s *snapshot) Release() {}

// Restore replaces the whole database with the snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	d, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.d = d
	close(f.watch)
	f.watch = make(chan struct{})
	return nil
}

func readSnapshot(r io.Reader) (*db, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	var h snapshotHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	if h.Format != snapshotFormat || h.Version < 1 || h.Version > SnapshotVersion {
		return nil, fmt.Errorf("%w: format %q version %d", ErrSnapshotFormat, h.Format, h.Version)
	}
	d := newDB()
	d.index, d.nextJobID = h.Index, h.NextJobID
	if h.Version >= 2 {
		if err := dec.Decode(&d.database); err != nil {
			return nil, fmt.Errorf("read database: %w", err)
		}
		d.databaseIndex = h.DatabaseIndex
	}
	for range h.Machines {
		m := new(Machine)
		if err := dec.Decode(m); err != nil {
			return nil, fmt.Errorf("read machine: %w", err)
		}
		d.machines[m.Name] = m
	}
	for range h.Jobs {
		j := new(Job)
		if err := dec.Decode(j); err != nil {
			return nil, fmt.Errorf("read job: %w", err)
		}
		d.jobs[j.ID] = j
	}
	if h.Version >= 3 {
		d.nextReservationID = max(h.NextReservationID, 1)
		for range h.Reservations {
			r := new(Reservation)
			if err := dec.Decode(r); err != nil {
				return nil, fmt.Errorf("read reservation: %w", err)
			}
			d.reservations[r.ID] = r
		}
	}
	d.reindex()
	return d, nil
}
