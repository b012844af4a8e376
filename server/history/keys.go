package history

import (
	"encoding/binary"
	"time"
)

// The buckets. Every key starts with big-endian numbers, so bbolt's byte
// order is the order of index, or time, or id.
var (
	bucketMeta          = []byte("meta")           // metaApplied, metaGaps
	bucketEvents        = []byte("events")         // index|seq -> Event (JSON)
	bucketEventsByTime  = []byte("events-time")    // at|index|seq -> nothing
	bucketAttempts      = []byte("attempts")       // job|instance|attempt -> Attempt (JSON)
	bucketAttemptsEnd   = []byte("attempts-end")   // ended|id -> nothing
	bucketAttemptsIndex = []byte("attempts-index") // index|id -> nothing
	// The secondary indexes: value|0|ended|id -> nothing.
	bucketByUser    = []byte("attempts-user")
	bucketByQueue   = []byte("attempts-queue")
	bucketByMachine = []byte("attempts-machine")
	bucketByState   = []byte("attempts-state")

	metaApplied = []byte("applied")
	metaGaps    = []byte("gaps")
)

var allBuckets = [][]byte{bucketMeta, bucketEvents, bucketEventsByTime, bucketAttempts, bucketAttemptsEnd,
	bucketAttemptsIndex, bucketByUser, bucketByQueue, bucketByMachine, bucketByState}

const idLen = 20 // job(8) instance(4) attempt(8)

func u64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// timeKey is t in nanoseconds since 1970, 0 for earlier times and the
// zero time.
func timeKey(b []byte, t time.Time) []byte {
	if t.IsZero() || t.UnixNano() < 0 {
		return u64(b, 0)
	}
	return u64(b, uint64(t.UnixNano()))
}

func eventKey(e *Event) []byte {
	return binary.BigEndian.AppendUint32(u64(make([]byte, 0, 12), e.Index), uint32(e.Seq))
}

func eventTimeKey(e *Event) []byte { return append(timeKey(make([]byte, 0, 20), e.At), eventKey(e)...) }

func attemptID(a *Attempt) []byte {
	b := u64(make([]byte, 0, idLen), a.Job)
	b = binary.BigEndian.AppendUint32(b, uint32(a.Instance))
	return u64(b, a.Attempt)
}

func endKey(a *Attempt) []byte {
	return append(timeKey(make([]byte, 0, 8+idLen), a.EndedAt), attemptID(a)...)
}

func indexKey(a *Attempt) []byte {
	return append(u64(make([]byte, 0, 8+idLen), a.Index), attemptID(a)...)
}

// secondary lists the index buckets an attempt is filed under, with its
// key in each; an empty value (no machine) files nothing.
func secondary(a *Attempt) (buckets, keys [][]byte) {
	for _, s := range []struct {
		b []byte
		v string
	}{{bucketByUser, a.Owner}, {bucketByQueue, a.Queue}, {bucketByMachine, a.Machine}, {bucketByState, a.State}} {
		if s.v == "" {
			continue
		}
		buckets = append(buckets, s.b)
		keys = append(keys, append(append([]byte(s.v), 0), endKey(a)...))
	}
	return buckets, keys
}

func readU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
