package queue

import (
	"cmp"
	"slices"
)

// Item is one waiting instance of a job.
type Item struct {
	// JobID identifies the job.
	JobID uint64
	// Instance is the instance number within the job.
	Instance int
	// Priority orders jobs: higher first.
	Priority int
	// SubmitIndex is the Raft index of the job's Submit command: earlier
	// first among equal priorities.
	SubmitIndex uint64
}

// Compare returns a negative number when a runs before b, a positive number
// when b runs before a, and zero when they are equal in every key: Priority
// descending, then SubmitIndex, JobID and Instance ascending. It suits
// slices.SortFunc and slices.BinarySearchFunc.
func Compare(a, b Item) int {
	return cmp.Or(
		cmp.Compare(b.Priority, a.Priority),
		cmp.Compare(a.SubmitIndex, b.SubmitIndex),
		cmp.Compare(a.JobID, b.JobID),
		cmp.Compare(a.Instance, b.Instance),
	)
}

// Order sorts items in place into the order they should be scheduled (see
// Compare). Items are told apart by (JobID, Instance), so any input order
// gives the same result. It does not allocate.
func Order(items []Item) {
	slices.SortFunc(items, Compare)
}
