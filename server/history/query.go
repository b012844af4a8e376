package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
)

// Attempts returns the attempts f selects, in order of end time. It reads
// the most selective index the filter allows: one job's attempts, a
// user's, a machine's, a queue's or a state's, else all, from f.Since on.
func (db *DB) Attempts(f Filter) ([]Attempt, error) {
	if f.Job != 0 {
		return db.jobAttempts(f)
	}
	var out []Attempt
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		attempts := tx.Bucket(bucketAttempts)
		bucket, prefix := bucketAttemptsEnd, []byte(nil)
		for _, s := range []struct {
			b []byte
			v string
		}{{bucketByUser, f.User}, {bucketByMachine, f.Machine}, {bucketByQueue, f.Queue}, {bucketByState, f.State}} {
			if s.v != "" {
				bucket, prefix = s.b, append([]byte(s.v), 0)
				break
			}
		}
		c := tx.Bucket(bucket).Cursor()
		start := timeKey(bytes.Clone(prefix), f.Since)
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			rest := k[len(prefix):]
			if !f.Until.IsZero() && readU64(rest) >= readU64(timeKey(nil, f.Until)) {
				break
			}
			v := attempts.Get(rest[8:])
			if v == nil {
				continue
			}
			var a Attempt
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("attempt %x: %w", rest[8:], err)
			}
			if f.match(&a) {
				out = append(out, a)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return out, nil
}

// jobAttempts returns the attempts of job f.Job that f selects, in order
// of end time: a prefix scan of the attempts bucket, keyed by job first.
func (db *DB) jobAttempts(f Filter) ([]Attempt, error) {
	var out []Attempt
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		prefix := u64(nil, f.Job)
		c := tx.Bucket(bucketAttempts).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var a Attempt
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("attempt %x: %w", k, err)
			}
			if f.match(&a) {
				out = append(out, a)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read history of job %d: %w", f.Job, err)
	}
	slices.SortStableFunc(out, func(a, b Attempt) int { return a.EndedAt.Compare(b.EndedAt) })
	return out, nil
}

// Events returns the events f selects, oldest (lowest index) first.
func (db *DB) Events(f EventFilter) ([]Event, error) {
	var out []Event
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(u64(nil, f.After+1)); k != nil; k, v = c.Next() {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("event %x: %w", k, err)
			}
			if !f.Since.IsZero() && e.At.Before(f.Since) || !f.Until.IsZero() && !e.At.Before(f.Until) {
				continue
			}
			out = append(out, e)
			if f.Limit > 0 && len(out) >= f.Limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

// LastEvents returns the last n events (highest indexes), oldest first:
// a backward scan from the newest, so its cost is n's, not the history's.
func (db *DB) LastEvents(n int) ([]Event, error) {
	var out []Event
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Last(); k != nil && len(out) < n; k, v = c.Prev() {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("event %x: %w", k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read last events: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}
