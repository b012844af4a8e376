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
	// ErrTimeOverLimit means a job's time limit (time=) is over its
	// queue's nq_maxrun.
	ErrTimeOverLimit = errors.New("time limit over queue limit")
	// ErrUserQueueFull means the submitting user already holds
	// nq_maxuser_queued unfinished jobs in the queue.
	ErrUserQueueFull = errors.New("user's share of the queue full")
	// ErrNoTimeLimit means a job asks a warning before its time limit
	// (signal=SIG@LEAD) but neither it nor its queue sets one, or the
	// warning would come before the job starts.
	ErrNoTimeLimit = errors.New("warning without a time limit")
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
	// KillGraceSeconds is kill_grace: the time from the SIGTERM that ends
	// one of the queue's instances to the SIGKILL; 0 for the caller's
	// default.
	KillGraceSeconds int64
	// MaxUserActive is nq_maxuser_active: the most of the queue's
	// instances one user has placed, running or suspended at once.
	MaxUserActive int64
	// MaxUserQueued is nq_maxuser_queued: the most unfinished jobs one
	// user holds in the queue.
	MaxUserQueued int64
	// Interactive marks the queue of interactive work: its instances
	// become Items with Interactive set, which run before every other
	// queue's whatever the priorities.
	Interactive bool
	// Policy is the queue's placement policy: "" or "backfill", "gang",
	// "dedicated" or "spread" (the database language's policy=). The
	// planner reads it; the limits here do not depend on it.
	Policy string
}

// The placement policies of Limits.Policy.
const (
	PolicyBackfill  = "backfill"
	PolicyGang      = "gang"
	PolicyDedicated = "dedicated"
	PolicySpread    = "spread"
)

// Placement is the queue's placement policy, PolicyBackfill when it sets
// none.
func (l Limits) Placement() string {
	if l.Policy == "" {
		return PolicyBackfill
	}
	return l.Policy
}

// Grace is the queue's kill grace, def when it sets none.
func (l Limits) Grace(def time.Duration) time.Duration {
	if l.KillGraceSeconds <= 0 {
		return def
	}
	return time.Duration(l.KillGraceSeconds) * time.Second
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

// CheckUser refuses a job of user that queue name cannot take under its
// per-user limit, and returns nil when it can. held is the number of
// unfinished jobs user already holds in the queue. The rule:
//   - l.MaxUserQueued > 0 and held >= l.MaxUserQueued: ErrUserQueueFull,
//     message `user alice already holds 20 unfinished jobs in queue
//     NEW_Q (nq_maxuser_queued=20); wait for some to finish or use
//     another queue`
func CheckUser(name string, l Limits, user string, held int) error {
	if l.MaxUserQueued > 0 && int64(held) >= l.MaxUserQueued {
		return &limitError{
			msg: fmt.Sprintf("user %s already holds %d unfinished %s in queue %s (nq_maxuser_queued=%d); wait for some to finish or use another queue",
				user, held, plural(held, "job", "jobs"), name, l.MaxUserQueued),
			err: ErrUserQueueFull,
		}
	}
	return nil
}

// CheckTime refuses a job's own time limit that queue name cannot take,
// and returns nil when it can. timeS is the job's time limit (time=) in
// seconds, leadS how long before the limit its warning comes
// (signal=SIG@LEAD); 0 for none.
//
// The rules:
//   - l.MaxRunSeconds > 0 and timeS > l.MaxRunSeconds: ErrTimeOverLimit,
//     message `job asks a time limit of 5h but queue NEW_Q allows 200m
//     (nq_maxrun=200); ask for time=200 or less, or use another queue`
//   - leadS > 0 and neither timeS nor l.MaxRunSeconds set: ErrNoTimeLimit,
//     message `signal= warns 60s before the time limit, but the job has
//     none (time=) and queue NEW_Q has no nq_maxrun; give time=`
//   - leadS at least the limit that applies (timeS, else the queue's):
//     ErrNoTimeLimit, the warning would come before the job starts.
func CheckTime(name string, l Limits, timeS, leadS int64) error {
	if l.MaxRunSeconds > 0 && timeS > l.MaxRunSeconds {
		return &limitError{
			msg: fmt.Sprintf("job asks a time limit of %s but queue %s allows %s (nq_maxrun=%s); ask for time=%s or less, or use another queue",
				formatSeconds(timeS), name, formatSeconds(l.MaxRunSeconds), nqMaxRun(l.MaxRunSeconds), nqMaxRun(l.MaxRunSeconds)),
			err: ErrTimeOverLimit,
		}
	}
	if leadS <= 0 {
		return nil
	}
	limit := timeS
	if limit == 0 {
		limit = l.MaxRunSeconds
	}
	switch {
	case limit <= 0:
		return &limitError{
			msg: fmt.Sprintf("signal= warns %s before the time limit, but the job has none (time=) and queue %s has no nq_maxrun; give time=",
				formatSeconds(leadS), name),
			err: ErrNoTimeLimit,
		}
	case leadS >= limit:
		return &limitError{
			msg: fmt.Sprintf("signal= warns %s before a time limit of %s (%s): the warning would come before the job starts",
				formatSeconds(leadS), formatSeconds(limit), limitSource(timeS, name)),
			err: ErrNoTimeLimit,
		}
	}
	return nil
}

// EffectiveRun is the run limit of one of the queue's instances whose job
// asks timeS (time=, 0 for none): the smaller of both, 0 for none.
func (l Limits) EffectiveRun(timeS int64) time.Duration {
	switch {
	case timeS <= 0:
		return l.RunLimit()
	case l.MaxRunSeconds > 0 && l.MaxRunSeconds < timeS:
		return l.RunLimit()
	}
	return time.Duration(timeS) * time.Second
}

// limitSource names where a time limit came from, for messages.
func limitSource(timeS int64, queue string) string {
	if timeS > 0 {
		return "the job's time="
	}
	return "queue " + queue + "'s nq_maxrun"
}

// formatSeconds prints seconds with the largest unit that divides them:
// "2h", "90m", "45s".
func formatSeconds(secs int64) string {
	switch {
	case secs%3600 == 0:
		return fmt.Sprintf("%dh", secs/3600)
	case secs%60 == 0:
		return fmt.Sprintf("%dm", secs/60)
	}
	return fmt.Sprintf("%ds", secs)
}

// nqMaxRun prints a run limit as nq_maxrun writes it: whole minutes
// without a unit, else seconds with one.
func nqMaxRun(secs int64) string {
	if secs%60 == 0 {
		return fmt.Sprintf("%d", secs/60)
	}
	return fmt.Sprintf("%ds", secs)
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
