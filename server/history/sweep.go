package history

import (
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// sweepBatch is how many records one sweep transaction removes at most,
// so that a large sweep does not hold the writers back for long.
const sweepBatch = 10000

// Sweep removes the events and attempts that ended before before and
// returns how many records it removed. It runs in transactions of at most
// sweepBatch records.
func (db *DB) Sweep(before time.Time) (int, error) {
	limit := timeKey(nil, before)
	total := 0
	for {
		n, err := db.sweepOnce(limit)
		total += n
		if err != nil {
			return total, fmt.Errorf("sweep history: %w", err)
		}
		if n < sweepBatch {
			return total, nil
		}
	}
}

func (db *DB) sweepOnce(limit []byte) (int, error) {
	n := 0
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		events, byTime := tx.Bucket(bucketEvents), tx.Bucket(bucketEventsByTime)
		c := byTime.Cursor()
		for k, _ := c.First(); k != nil && n < sweepBatch && string(k[:8]) < string(limit); k, _ = c.First() {
			if err := events.Delete(k[8:]); err != nil {
				return err
			}
			if err := byTime.Delete(k); err != nil {
				return err
			}
			n++
		}
		attempts := tx.Bucket(bucketAttempts)
		c = tx.Bucket(bucketAttemptsEnd).Cursor()
		for k, _ := c.First(); k != nil && n < sweepBatch && string(k[:8]) < string(limit); k, _ = c.First() {
			v := attempts.Get(k[8:])
			if v == nil { // an index entry without its record: drop it
				if err := tx.Bucket(bucketAttemptsEnd).Delete(k); err != nil {
					return err
				}
				n++
				continue
			}
			var a Attempt
			if err := json.Unmarshal(v, &a); err != nil {
				return fmt.Errorf("attempt %x: %w", k[8:], err)
			}
			if err := deleteAttempt(tx, &a); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
