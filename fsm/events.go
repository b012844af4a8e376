package fsm

import (
	"fmt"
	"sort"
	"time"
)

// EventCapacity is how many events the ring keeps; older ones are dropped.
const EventCapacity = 4096

// Event kinds.
const (
	EventLeaderElected      = "leader-elected"
	EventMachineJoined      = "machine-joined"
	EventMachineLeft        = "machine-left"
	EventMachineUnreachable = "machine-unreachable"
	EventMachineBack        = "machine-back"
	EventMachineRestarting  = "machine-restarting"
	EventMachineUnhealthy   = "machine-unhealthy"
	EventMachineHealthy     = "machine-healthy"
	EventMachineAsleep      = "machine-asleep"
	EventMachineAwake       = "machine-awake"
	EventInstancePlaced     = "instance-placed"
	EventInstanceStarted    = "instance-started"
	EventInstanceEnded      = "instance-ended"
	EventInstanceLost       = "instance-lost"
	EventInstanceUnknown    = "instance-unknown"
	EventInstanceRestarted  = "instance-restarted"
	EventInstanceFenced     = "instance-fenced"
	EventInstanceFailed     = "instance-failed"
	EventInstanceKilled     = "instance-killed"
	EventInstanceLeftovers  = "instance-leftovers-killed"
	EventJobSubmitted       = "job-submitted"
	EventJobKilled          = "job-killed"
	EventJobReleased        = "job-released"
	EventJobCancelled       = "job-cancelled"
	EventDatabaseLoaded     = "database-loaded"
	EventQueueAdded         = "queue-added"
	EventQueueChanged       = "queue-changed"
	EventQueueRemoved       = "queue-removed"
	EventServerRemoved      = "server-removed"
	EventTokenIssued        = "token-issued"
	EventTokenRevoked       = "token-revoked"
	EventGangBroken         = "gang-broken"
	// EventInstancePreempted is a victim of a Preempt, EventJobPreempting
	// its preemptor, EventInstanceResumed a lent victim continued.
	EventInstancePreempted = "instance-preempted"
	EventJobPreempting     = "job-preempting"
	EventInstanceResumed   = "instance-resumed"
	EventSessionOpened     = "session-opened"
	EventSessionAttached   = "session-attached"
	EventSessionClosed     = "session-closed"
)

// Event is one committed state change, derived from a command as it is
// applied. At is the command's time, so every replica records the same
// events. Instance is -1 for events that name no instance.
type Event struct {
	Index    uint64
	At       time.Time
	Kind     string
	Job      uint64
	Instance int
	Attempt  uint64
	Machine  string
	Detail   string
}

// eventRing keeps the last EventCapacity events. It is derived and not
// snapshotted: a replica restored from a snapshot starts with an empty ring.
// The zero value is empty and ready.
type eventRing struct {
	buf   []Event // allocated on first use, EventCapacity long
	start int     // position of the oldest event
	n     int     // events held
}

func (r *eventRing) add(e Event) {
	if r.buf == nil {
		r.buf = make([]Event, EventCapacity)
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = e
		r.n++
		return
	}
	r.buf[r.start] = e
	r.start = (r.start + 1) % len(r.buf)
}

func (r *eventRing) at(i int) Event { return r.buf[(r.start+i)%len(r.buf)] }

// since copies the events whose index is greater than index, oldest first.
func (r *eventRing) since(index uint64) []Event {
	first := sort.Search(r.n, func(i int) bool { return r.at(i).Index > index })
	out := make([]Event, 0, r.n-first)
	for i := first; i < r.n; i++ {
		out = append(out, r.at(i))
	}
	return out
}

// event records a state change of the command at index.
func (d *db) event(index uint64, at time.Time, kind string, job uint64, instance int, attempt uint64, machine, detail string) {
	e := Event{Index: index, At: at, Kind: kind, Job: job, Instance: instance, Attempt: attempt, Machine: machine, Detail: detail}
	d.events.add(e)
	if d.out != nil {
		d.out.events = append(d.out.events, e)
	}
}

// EventsSince returns the events recorded after index, oldest first, as
// copies. Only the last EventCapacity events applied on this replica since
// it started or restored a snapshot are kept.
func (v View) EventsSince(index uint64) []Event { return v.d.events.since(index) }

// applyLeaderElected only records the event.
func (d *db) applyLeaderElected(index uint64, c *LeaderElected) *Result {
	d.event(index, c.At, EventLeaderElected, 0, -1, 0, "", fmt.Sprintf("server %s, term %d", c.Name, c.Term))
	return &Result{Index: index}
}

// applySessionEvent only records the event, naming who and, for a shell,
// that it was one.
func (d *db) applySessionEvent(index uint64, c *SessionEvent) *Result {
	kind := "session-" + c.Kind
	switch c.Kind {
	case SessionOpened, SessionAttached, SessionClosed:
	default:
		return &Result{Index: index, Err: fmt.Errorf("session event %q: not opened, attached or closed", c.Kind)}
	}
	what := "session"
	if c.Shell {
		what = "shell"
	}
	d.event(index, c.At, kind, c.JobID, c.Instance, c.Attempt, c.Machine, fmt.Sprintf("%s %s by %s", what, c.Kind, c.By))
	return &Result{Index: index}
}
