package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// This file renders what the scheduler holds besides jobs: batch queues
// (netstatus -q) and reservations (netstatus -r, reserve, unreserve).

// formatWhen prints t for a person in now's location: "14:00" on now's
// day, "Jan 3 14:00" in now's year, else "2027-01-03 14:00".
func formatWhen(t, now time.Time) string {
	t = t.In(now.Location())
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	switch {
	case ty == ny && tm == nm && td == nd:
		return t.Format("15:04")
	case ty == ny:
		return t.Format("Jan 2 15:04")
	}
	return t.Format("2006-01-02 15:04")
}

// optionalTime is t for JSON, nil (null) when t is zero.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// formatRunLimit prints a run limit compactly: "200m" for whole minutes,
// else "90s"; "-" for no limit.
func formatRunLimit(secs int64) string {
	switch {
	case secs <= 0:
		return "-"
	case secs%60 == 0:
		return strconv.FormatInt(secs/60, 10) + "m"
	}
	return strconv.FormatInt(secs, 10) + "s"
}

// formatMemLimit prints a memory limit exactly: "20M", "2G" for whole
// gigabytes; "-" for no limit.
func formatMemLimit(mb int64) string {
	switch {
	case mb <= 0:
		return "-"
	case mb%1024 == 0:
		return strconv.FormatInt(mb/1024, 10) + "G"
	}
	return strconv.FormatInt(mb, 10) + "M"
}

// formatLimit prints a count limit, "-" for no limit.
func formatLimit(n int64) string {
	if n <= 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// sortedQueues orders queues as the scheduler serves them: the
// interactive queue first, then higher priority first, then by name.
func sortedQueues(qs []client.Queue) []client.Queue {
	out := append([]client.Queue(nil), qs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Interactive != out[j].Interactive {
			return out[i].Interactive
		}
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// renderQueues writes the netstatus -q table, "-" meaning no limit: the
// values in force, and, when some queue has a prime-time window, a PRIME
// column saying whether it is open and until when (renderPrime). The
// interactive queue's PRIORITY says "interactive", as it starts before
// every priority.
func renderQueues(w io.Writer, qs []client.Queue, now time.Time) error {
	tw := newTable(w)
	prime := slices.ContainsFunc(qs, func(q client.Queue) bool { return q.Prime != nil })
	head := "QUEUE\tPRIORITY\tMAXSIZE\tMAXACTIVE\tMAXRUN\tMAXMEM\tJOBS\tWAITING\tRUNNING"
	if prime {
		head += "\tPRIME"
	}
	fmt.Fprintln(tw, head)
	for _, q := range sortedQueues(qs) {
		prio := strconv.Itoa(q.Priority)
		if q.Interactive {
			prio = "interactive"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d", printable(q.Name), prio, formatLimit(q.MaxSize), formatLimit(q.MaxActive),
			formatRunLimit(q.MaxRunSeconds), formatMemLimit(q.MaxMemMB), q.Jobs, q.Waiting, q.Running)
		if prime {
			fmt.Fprintf(tw, "\t%s", renderPrime(q.Prime, now))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// queueRow is one object of netstatus -q --json; a limit of 0 means none.
type queueRow struct {
	Name          string `json:"name"`
	Priority      int    `json:"priority"`
	MaxSize       int64  `json:"max_size"`
	MaxActive     int64  `json:"max_active"`
	MaxRunSeconds int64  `json:"max_run_seconds"`
	MaxMemMB      int64  `json:"max_mem_mb"`
	Jobs          int    `json:"jobs"`
	Waiting       int    `json:"waiting"`
	Running       int    `json:"running"`
	Policy        string `json:"policy,omitempty"`
	Preempt       string `json:"preempt,omitempty"`
	MaxUserActive int64  `json:"max_user_active,omitempty"`
	MaxUserQueued int64  `json:"max_user_queued,omitempty"`
	Interactive   bool   `json:"interactive,omitempty"`
	// Prime is the queue's prime-time window; the values above are those
	// in force.
	Prime *client.QueuePrime `json:"prime,omitempty"`
}

// renderQueuesJSON writes netstatus -q --json.
func renderQueuesJSON(w io.Writer, qs []client.Queue) error {
	rows := []queueRow{}
	for _, q := range sortedQueues(qs) {
		rows = append(rows, queueRow(q))
	}
	return writeJSON(w, rows)
}

// describeQueue says what a queue's settings are, for admin queue add and
// set: "priority 5, max size 120, max active 100, max run 200m, max mem
// 20M", leaving out the limits it does not have.
func describeQueue(q client.Queue) string {
	parts := []string{"priority " + strconv.Itoa(q.Priority)}
	if q.MaxSize > 0 {
		parts = append(parts, "max size "+formatLimit(q.MaxSize))
	}
	if q.MaxActive > 0 {
		parts = append(parts, "max active "+formatLimit(q.MaxActive))
	}
	if q.MaxRunSeconds > 0 {
		parts = append(parts, "max run "+formatRunLimit(q.MaxRunSeconds))
	}
	if q.MaxMemMB > 0 {
		parts = append(parts, "max mem "+formatMemLimit(q.MaxMemMB))
	}
	if len(parts) == 1 {
		parts = append(parts, "no limits")
	}
	if q.Policy != "" {
		parts = append(parts, "policy "+printable(q.Policy))
	}
	if q.Preempt != "" {
		parts = append(parts, "preempt "+printable(q.Preempt))
	}
	return strings.Join(parts, ", ")
}

// sortedReservations orders reservations by id.
func sortedReservations(rs []client.Reservation) []client.Reservation {
	out := append([]client.Reservation(nil), rs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// describeReservation is one line for reserve and unreserve: "reservation
// 3: flute, viola for root from 14:00 until 16:00" (or "until
// unreserved"), with times in now's location.
func describeReservation(r client.Reservation, now time.Time) string {
	from := "now"
	if !r.From.IsZero() {
		from = formatWhen(r.From, now)
	}
	until := "unreserved"
	if !r.Until.IsZero() {
		until = formatWhen(r.Until, now)
	}
	return fmt.Sprintf("reservation %d: %s for %s from %s until %s", r.ID, printable(strings.Join(r.Machines, ", ")), printable(r.Owner), from, until)
}

// renderReservations writes the netstatus -r table; UNTIL is "-" for a
// reservation that lasts until unreserved.
func renderReservations(w io.Writer, rs []client.Reservation, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tOWNER\tMACHINES\tFROM\tUNTIL")
	for _, r := range sortedReservations(rs) {
		until := "-"
		if !r.Until.IsZero() {
			until = formatWhen(r.Until, now)
		}
		from := "-"
		if !r.From.IsZero() {
			from = formatWhen(r.From, now)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.ID, printable(r.Owner), printable(strings.Join(r.Machines, ",")), from, until)
	}
	return tw.Flush()
}

// reservationRow is one object of netstatus -r --json; until is null for a
// reservation that lasts until unreserved.
type reservationRow struct {
	ID       uint64     `json:"id"`
	Owner    string     `json:"owner"`
	Machines []string   `json:"machines"`
	From     time.Time  `json:"from"`
	Until    *time.Time `json:"until"`
}

// renderReservationsJSON writes netstatus -r --json.
func renderReservationsJSON(w io.Writer, rs []client.Reservation) error {
	rows := []reservationRow{}
	for _, r := range sortedReservations(rs) {
		rows = append(rows, reservationRow{
			ID: r.ID, Owner: r.Owner, Machines: append([]string{}, r.Machines...), From: r.From, Until: optionalTime(r.Until),
		})
	}
	return writeJSON(w, rows)
}
