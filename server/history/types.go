package history

import "time"

// Event is one committed state change, as package fsm derived it from an
// entry. Seq is its place among the entry's events.
type Event struct {
	Index    uint64    `json:"index"`
	Seq      int       `json:"seq"`
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"`
	Job      uint64    `json:"job,omitempty"`
	Instance int       `json:"instance"`
	Attempt  uint64    `json:"attempt,omitempty"`
	Machine  string    `json:"machine,omitempty"`
	Detail   string    `json:"detail,omitempty"`
}

// Attempt is how one attempt of one instance ended. Index is the entry
// that ended it (a later entry may record the same attempt again, as when
// a lost attempt's result arrives: the later one wins). ReplacedBy is the
// attempt that took its place, 0 when none did.
type Attempt struct {
	Index       uint64    `json:"index"`
	Job         uint64    `json:"job"`
	Name        string    `json:"name,omitempty"`
	Owner       string    `json:"owner"`
	Queue       string    `json:"queue,omitempty"`
	Instance    int       `json:"instance"`
	Attempt     uint64    `json:"attempt"`
	Machine     string    `json:"machine,omitempty"`
	State       string    `json:"state"`
	ExitCode    int       `json:"exit_code"`
	Signal      string    `json:"signal,omitempty"`
	Error       string    `json:"error,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	UserMS      int64     `json:"user_ms,omitempty"`
	SysMS       int64     `json:"sys_ms,omitempty"`
	MaxRSSKB    int64     `json:"max_rss_kb,omitempty"`
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	PlacedAt    time.Time `json:"placed_at,omitzero"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	ReplacedBy  uint64    `json:"replaced_by,omitempty"`
	// CheckpointSize and CheckpointAt describe the checkpoint the attempt
	// kept; zero for none.
	CheckpointSize int64     `json:"checkpoint_size,omitempty"`
	CheckpointAt   time.Time `json:"checkpoint_at,omitzero"`
}

// Entry is what one log entry produced.
type Entry struct {
	Index    uint64    `json:"index"`
	Events   []Event   `json:"events,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Gap is a range of entries, After < index <= Through, whose records this
// server lacks: a snapshot restore skipped them.
type Gap struct {
	After   uint64 `json:"after"`
	Through uint64 `json:"through"`
}

// Filter selects attempts; the zero value selects all. Since and Until
// bound the end time (Since inclusive, Until exclusive).
type Filter struct {
	User    string
	State   string
	Queue   string
	Machine string
	Job     uint64
	Since   time.Time
	Until   time.Time
}

func (f *Filter) match(a *Attempt) bool {
	return (f.User == "" || a.Owner == f.User) && (f.State == "" || a.State == f.State) &&
		(f.Queue == "" || a.Queue == f.Queue) && (f.Machine == "" || a.Machine == f.Machine) &&
		(f.Job == 0 || a.Job == f.Job) &&
		(f.Since.IsZero() || !a.EndedAt.Before(f.Since)) && (f.Until.IsZero() || a.EndedAt.Before(f.Until))
}

// EventFilter selects events: those after index After, at or after
// Since, before Until (zero: no bound), at most Limit (0: all), oldest
// first.
type EventFilter struct {
	After uint64
	Since time.Time
	Until time.Time
	Limit int
}
