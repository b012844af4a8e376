package fsm

import (
	"fmt"
	"strings"
)

// The details of the events that record administrative changes (database
// loads, queue changes, server removals, tokens): who made the change, as
// the command's By names them, and what it was, in words an operator
// reading `netmgr events` needs no manual for.

// loadDetail describes a LoadDatabase that was applied.
func loadDetail(c *LoadDatabase, draining []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s loaded the database", actor(c.By))
	if c.Source != "" {
		fmt.Fprintf(&b, " from %s", c.Source)
	}
	fmt.Fprintf(&b, " (%s, %s)", plural(len(c.Database.Machines), "machine"), plural(len(c.Database.Queues), "queue"))
	if len(draining) > 0 {
		fmt.Fprintf(&b, "; draining %s", strings.Join(draining, ", "))
	}
	return b.String()
}

// describeLimits lists a queue's priority and the limits it sets.
func describeLimits(q DeclaredQueue) string {
	parts := []string{fmt.Sprintf("priority %d", q.Priority)}
	if q.MaxSize > 0 {
		parts = append(parts, fmt.Sprintf("max size %d", q.MaxSize))
	}
	if q.MaxActive > 0 {
		parts = append(parts, fmt.Sprintf("max active %d", q.MaxActive))
	}
	if q.MaxRunSeconds > 0 {
		parts = append(parts, fmt.Sprintf("max run %ds", q.MaxRunSeconds))
	}
	if q.MaxMemMB > 0 {
		parts = append(parts, fmt.Sprintf("max mem %d MB", q.MaxMemMB))
	}
	if q.KillGraceSeconds > 0 {
		parts = append(parts, fmt.Sprintf("kill grace %ds", q.KillGraceSeconds))
	}
	if len(parts) == 1 {
		parts = append(parts, "no limits")
	}
	if q.Policy != "" {
		parts = append(parts, "policy "+q.Policy)
	}
	if q.Preempt != "" {
		parts = append(parts, "preempt "+q.Preempt)
	}
	return strings.Join(parts, ", ")
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// actor names who made an administrative change, for an event's detail:
// "admin alice" for a user; a By that is not a user name ("server s1",
// for the database a server loads from --database) as it is.
func actor(by string) string {
	switch {
	case by == "":
		return "an admin"
	case strings.ContainsRune(by, ' '):
		return by
	}
	return "admin " + by
}
