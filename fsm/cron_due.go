package fsm

import "time"

// Schedule is a parsed cron expression: Next is the first time of the
// schedule strictly after t, zero when there is none. The server parses
// expressions (github.com/robfig/cron/v3 schedules satisfy it); the state
// machine never does.
type Schedule interface {
	Next(t time.Time) time.Time
}

// maxCronScan bounds how many due times CronDue walks through after an
// outage; past it, the walk jumps to cronScanJump before now and MissedMore
// counts only the times it walked.
const maxCronScan = 100000

// cronScanJump is how far before now a walk that reached maxCronScan
// resumes.
const cronScanJump = time.Hour

// CronDue is what the leader proposes for cron job j at now, whose
// expression parses to sched: the firing due (nil when none is) and the
// time of the schedule's next firing after now (zero when none). Every
// time after the job's committed Through and at or before now is due; all
// but the latest were missed (no leader fired them at their time). The
// latest runs, late or not, under catchup=last; under catchup=none it
// runs only if it is at most grace late, and is recorded as missed
// otherwise. CronDue reads the job and no clock: the same state and now
// give the same answer on any server.
func CronDue(j *Job, sched Schedule, now time.Time, grace time.Duration) (*CronFire, time.Time) {
	if j.Cron == nil || j.Cron.Ended {
		return nil, time.Time{}
	}
	var (
		due     []time.Time // the latest MaxCronMissed+1 due times, oldest first
		count   int
		scanned int
	)
	t := sched.Next(j.Cron.Through)
	for !t.IsZero() && !t.After(now) {
		if len(due) == MaxCronMissed+1 {
			copy(due, due[1:])
			due = due[:MaxCronMissed]
		}
		due = append(due, t)
		count++
		if scanned++; scanned == maxCronScan {
			if jump := now.Add(-cronScanJump); jump.After(t) {
				t = jump // the times skipped here are counted by nobody
			}
		}
		t = sched.Next(t)
	}
	if count == 0 {
		return nil, t
	}
	latest := due[len(due)-1]
	fire := &CronFire{
		At:         now,
		JobID:      j.ID,
		Scheduled:  latest,
		Missed:     due[:len(due)-1],
		MissedMore: count - len(due),
	}
	if len(fire.Missed) == 0 {
		fire.Missed = nil
	}
	if j.Spec.CatchupPolicy() == CatchupNone && now.Sub(latest) > grace {
		fire.Skip = true
	}
	return fire, t
}
