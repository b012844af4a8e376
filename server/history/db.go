package history

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"
)

// ErrNotCovered means this server lacks some of the entries asked for: it
// has not applied them yet, or a snapshot restore skipped them.
var ErrNotCovered = errors.New("history does not cover the range")

// DB is one server's history file. Open it with Open; Close it when done.
type DB struct {
	bolt *bbolt.DB
}

// Open opens (creating if needed) the history file at path. It fails at
// once, rather than waiting, when another process holds the file.
func Open(path string) (*DB, error) {
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	err = b.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	return &DB{bolt: b}, nil
}

// Close closes the file.
func (db *DB) Close() error { return db.bolt.Close() }

// Write records entries, in one transaction, and moves Applied to the
// highest index among them. Writing an entry again rewrites the same keys.
func (db *DB) Write(entries []Entry) error {
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		applied := readU64(tx.Bucket(bucketMeta).Get(metaApplied))
		for i := range entries {
			if err := putEntry(tx, &entries[i]); err != nil {
				return err
			}
			applied = max(applied, entries[i].Index)
		}
		return tx.Bucket(bucketMeta).Put(metaApplied, u64(nil, applied))
	})
	if err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// Restored notes that a snapshot at index replaced the server's state:
// when Applied is below it, the entries in between are a gap, and Applied
// becomes index.
func (db *DB) Restored(index uint64) error {
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		applied := readU64(meta.Get(metaApplied))
		if applied >= index {
			return nil
		}
		gaps, err := readGaps(meta)
		if err != nil {
			return err
		}
		gaps = append(gaps, Gap{After: applied, Through: index})
		if err := writeGaps(meta, gaps); err != nil {
			return err
		}
		return meta.Put(metaApplied, u64(nil, index))
	})
	if err != nil {
		return fmt.Errorf("note restore at %d: %w", index, err)
	}
	return nil
}

// Applied returns the highest entry index recorded (or restored over).
func (db *DB) Applied() (uint64, error) {
	var n uint64
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		n = readU64(tx.Bucket(bucketMeta).Get(metaApplied))
		return nil
	})
	return n, err
}

// Gaps returns the ranges of entries this server lacks, oldest first.
func (db *DB) Gaps() ([]Gap, error) {
	var gaps []Gap
	err := db.bolt.View(func(tx *bbolt.Tx) error {
		var err error
		gaps, err = readGaps(tx.Bucket(bucketMeta))
		return err
	})
	return gaps, err
}

// Range returns the entries after index after, through index through, in
// order; when they hold more than about limit records it stops early, at
// an entry's end, and upTo says how far it got. It fails with
// ErrNotCovered unless this server holds every entry of the range.
func (db *DB) Range(after, through uint64, limit int) (entries []Entry, upTo uint64, err error) {
	err = db.bolt.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		gaps, err := readGaps(meta)
		if err != nil {
			return err
		}
		if readU64(meta.Get(metaApplied)) < through {
			return ErrNotCovered
		}
		for _, g := range gaps {
			if g.After < through && g.Through > after {
				return ErrNotCovered
			}
		}
		byIndex := map[uint64]int{} // index -> position in entries
		entry := func(i uint64) *Entry {
			p, ok := byIndex[i]
			if !ok {
				p = len(entries)
				entries = append(entries, Entry{Index: i})
				byIndex[i] = p
			}
			return &entries[p]
		}
		upTo = through
		n := 0
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(u64(nil, after+1)); k != nil && readU64(k) <= through; k, v = c.Next() {
			i := readU64(k)
			if _, seen := byIndex[i]; n >= limit && limit > 0 && !seen {
				upTo = i - 1
				break
			}
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("event %x: %w", k, err)
			}
			ent := entry(i)
			ent.Events = append(ent.Events, e)
			n++
		}
		attempts := tx.Bucket(bucketAttempts)
		c = tx.Bucket(bucketAttemptsIndex).Cursor()
		for k, _ := c.Seek(u64(nil, after+1)); k != nil && readU64(k) <= upTo; k, _ = c.Next() {
			var a Attempt
			if err := json.Unmarshal(attempts.Get(k[8:]), &a); err != nil {
				return fmt.Errorf("attempt %x: %w", k[8:], err)
			}
			ent := entry(readU64(k))
			ent.Attempts = append(ent.Attempts, a)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("history range %d..%d: %w", after, through, err)
	}
	// Entries were made in two passes; put them in index order.
	slices.SortFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Index, b.Index) })
	return entries, upTo, nil
}

// Fill records entries a peer sent for the entries after index after,
// through upTo, and takes that range out of the gap that starts at after.
func (db *DB) Fill(after, upTo uint64, entries []Entry) error {
	err := db.bolt.Update(func(tx *bbolt.Tx) error {
		for i := range entries {
			if entries[i].Index <= after || entries[i].Index > upTo {
				continue
			}
			if err := putEntry(tx, &entries[i]); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		gaps, err := readGaps(meta)
		if err != nil {
			return err
		}
		out := gaps[:0]
		for _, g := range gaps {
			if g.After == after {
				if upTo >= g.Through {
					continue
				}
				g.After = upTo
			}
			out = append(out, g)
		}
		return writeGaps(meta, out)
	})
	if err != nil {
		return fmt.Errorf("fill history %d..%d: %w", after, upTo, err)
	}
	return nil
}

func putEntry(tx *bbolt.Tx, e *Entry) error {
	events, byTime := tx.Bucket(bucketEvents), tx.Bucket(bucketEventsByTime)
	for i := range e.Events {
		ev := &e.Events[i]
		ev.Index, ev.Seq = e.Index, i
		v, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		if err := events.Put(eventKey(ev), v); err != nil {
			return err
		}
		if err := byTime.Put(eventTimeKey(ev), nil); err != nil {
			return err
		}
	}
	for i := range e.Attempts {
		e.Attempts[i].Index = e.Index
		if err := putAttempt(tx, &e.Attempts[i]); err != nil {
			return err
		}
	}
	return nil
}

// putAttempt files a, replacing an earlier record of the same attempt
// and keeping a later one.
func putAttempt(tx *bbolt.Tx, a *Attempt) error {
	attempts := tx.Bucket(bucketAttempts)
	id := attemptID(a)
	if old := attempts.Get(id); old != nil {
		var o Attempt
		if err := json.Unmarshal(old, &o); err != nil {
			return fmt.Errorf("attempt %x: %w", id, err)
		}
		if o.Index > a.Index {
			return nil
		}
		if err := deleteAttempt(tx, &o); err != nil {
			return err
		}
	}
	v, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode attempt: %w", err)
	}
	if err := attempts.Put(id, v); err != nil {
		return err
	}
	if err := tx.Bucket(bucketAttemptsEnd).Put(endKey(a), nil); err != nil {
		return err
	}
	if err := tx.Bucket(bucketAttemptsIndex).Put(indexKey(a), nil); err != nil {
		return err
	}
	buckets, keys := secondary(a)
	for i, b := range buckets {
		if err := tx.Bucket(b).Put(keys[i], nil); err != nil {
			return err
		}
	}
	return nil
}

// deleteAttempt removes a and every index entry naming it.
func deleteAttempt(tx *bbolt.Tx, a *Attempt) error {
	if err := tx.Bucket(bucketAttempts).Delete(attemptID(a)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketAttemptsEnd).Delete(endKey(a)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketAttemptsIndex).Delete(indexKey(a)); err != nil {
		return err
	}
	buckets, keys := secondary(a)
	for i, b := range buckets {
		if err := tx.Bucket(b).Delete(keys[i]); err != nil {
			return err
		}
	}
	return nil
}

func readGaps(meta *bbolt.Bucket) ([]Gap, error) {
	v := meta.Get(metaGaps)
	if v == nil {
		return nil, nil
	}
	var gaps []Gap
	if err := json.Unmarshal(v, &gaps); err != nil {
		return nil, fmt.Errorf("read gaps: %w", err)
	}
	return gaps, nil
}

func writeGaps(meta *bbolt.Bucket, gaps []Gap) error {
	if len(gaps) == 0 {
		return meta.Delete(metaGaps)
	}
	v, err := json.Marshal(gaps)
	if err != nil {
		return fmt.Errorf("write gaps: %w", err)
	}
	return meta.Put(metaGaps, v)
}
