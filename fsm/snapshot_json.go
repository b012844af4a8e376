package fsm

import (
	"encoding/json"
	"fmt"
	"io"
)

// readJSONRecords reads the records of a version 1 to 3 snapshot after
// its header: the database (version 2 on), then one JSON line per
// machine, per job, and (version 3) per reservation.
func readJSONRecords(d *db, h *snapshotHeader, r io.Reader) error {
	dec := json.NewDecoder(r)
	if h.Version >= 2 {
		if err := dec.Decode(&d.database); err != nil {
			return fmt.Errorf("read database: %w", err)
		}
		d.databaseIndex = h.DatabaseIndex
	}
	for range h.Machines {
		m := new(Machine)
		if err := dec.Decode(m); err != nil {
			return fmt.Errorf("read machine: %w", err)
		}
		d.machines[m.Name] = m
	}
	for range h.Jobs {
		j := new(Job)
		if err := dec.Decode(j); err != nil {
			return fmt.Errorf("read job: %w", err)
		}
		d.jobs[j.ID] = j
	}
	if h.Version >= 3 {
		d.nextReservationID = max(h.NextReservationID, 1)
		for range h.Reservations {
			r := new(Reservation)
			if err := dec.Decode(r); err != nil {
				return fmt.Errorf("read reservation: %w", err)
			}
			d.reservations[r.ID] = r
		}
	}
	return nil
}
