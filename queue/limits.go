package queue

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of CheckSubmit; test with errors.Is. The error returned
// carries the full message for the user.
var (
	// ErrQueueFull means the queue already holds nq_maxsize unfinished jobs.
	ErrQueueFull = errors.New("queue full")
	// ErrMemoryOverLimit means one instance asks more memory than the
	// queue's nq_maxmem.
	ErrMemoryOverLimit = errors.New("memory over queue limit")
)

// Limits are one queue's priority and limits; a zero limit means no limit.
type Limits struct {
	// Priority orders queues (priority=N): higher first. It becomes
	// Item.Priority of the queue's instances.
	Priority int
	// MaxSize is nq_maxsize: the most unfinished jobs the queue holds.
	MaxSize int64
	// MaxActive is nq_maxactive: the most of the queue's instances placed,
	// running or suspended at once.
	MaxActive int64
	// MaxRunSeconds is nq_maxrun in seconds: an instance's longest run
	// before SIGTERM, then SIGKILL after the grace period.
	MaxRunSeconds int64
	// MaxMemMB is nq_maxmem: the most memory one instance may ask and use,
	// in MB.
	MaxMemMB int64
}

// RunLimit is MaxRunSeconds as a duration: 0 when the queue has no run
// limit.
func (l Limits) RunLimit() time.Duration {
	if l.MaxRunSeconds <= 0 {
		return 0
	}
	return time.Duration(l.MaxRunSeconds) * time.Second
}

// CheckSubmit refuses a job that queue name cannot take, and returns nil
// when it can. held is the number of unfinished jobs already in the queue,
// memMB the memory one instance of the job asks (memory=N; 0 when it asks
// none, which is accepted: the stub enforces nq_maxmem at run time).
//
// The rules, memory first because resubmitting will not help:
//   - l.MaxMemMB > 0 and memMB > l.MaxMemMB: ErrMemoryOverLimit, message
//     `job asks 64 MB per instance but queue NEW_Q allows 20 MB
//     (nq_maxmem=20); ask for memory=20 or less, or use another queue`
//   - l.MaxSize > 0 and held >= l.MaxSize: ErrQueueFull, message
//     `queue NEW_Q is full: it holds 120 jobs (nq_maxsize=120); wait for
//     some to finish or use another queue`
func CheckSubmit(name string, l Limits, held int, memMB int64) error {
	if l.MaxMemMB > 0 && memMB > l.MaxMemMB {
		return &limitError{
			msg: fmt.Sprintf("job asks %d MB per instance but queue %s allows %d MB (nq_maxmem=%d); ask for memory=%d or less, or use another queue",
				memMB, name, l.MaxMemMB, l.MaxMemMB, l.MaxMemMB),
			err: ErrMemoryOverLimit,
		}
	}
	if l.MaxSize > 0 && int64(held) >= l.MaxSize {
		return &limitError{
			msg: fmt.Sprintf("queue %s is full: it holds %d %s (nq_maxsize=%d); wait for some to finish or use another queue",
				name, held, plural(held, "job", "jobs"), l.MaxSize),
			err: ErrQueueFull,
		}
	}
	return nil
}

// limitError is a refusal whose message is written for the user; it
// unwraps to its sentinel.
type limitError struct {
	msg string
	err error
}

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return e.err }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
