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
	// Interactive is set for the instances of the interactive queue
	// (Limits.Interactive): they come before every other item, whatever
	// its priority, for the fast turnaround interactive work needs.
	Interactive bool
	// Priority orders jobs: higher first. It is the priority of the job's
	// queue.
	Priority int
	// JobPriority orders a job's instances within its queue priority:
	// higher first, before Share. It is the job's own priority
	// (fsm.JobSpec.Priority), which only a site policy's admit sets; 0
	// for most jobs.
	JobPriority int
	// SubmitIndex is the Raft index of the job's Submit command: earlier
	// first among equal priorities.
	SubmitIndex uint64
	// Share is the rank of the job's owner in fair-share order
	// (ShareRanks): lower first among equal priorities, before submit
	// order. 0 for everyone when fair share is off.
	Share int
	// Queue names the job's queue (client.DefaultQueue when it names none);
	// Active admits by it. It is not an ordering key: (JobID, Instance)
	// already tells items apart.
	Queue string
}

// Compare returns a negative number when a runs before b, a positive number
// when b runs before a, and zero when they are equal in every key:
// Interactive first, then Priority and JobPriority descending, then Share,
// SubmitIndex, JobID and Instance ascending. It suits slices.SortFunc and
// slices.BinarySearchFunc.
func Compare(a, b Item) int {
	// Early returns rather than cmp.Or, which would evaluate every key.
	if a.Interactive != b.Interactive {
		if a.Interactive {
			return -1
		}
		return 1
	}
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if a.JobPriority != b.JobPriority {
		return cmp.Compare(b.JobPriority, a.JobPriority)
	}
	if a.Share != b.Share {
		return cmp.Compare(a.Share, b.Share)
	}
	if a.SubmitIndex != b.SubmitIndex {
		return cmp.Compare(a.SubmitIndex, b.SubmitIndex)
	}
	if a.JobID != b.JobID {
		return cmp.Compare(a.JobID, b.JobID)
	}
	return cmp.Compare(a.Instance, b.Instance)
}

// Order sorts items in place into the order they should be scheduled (see
// Compare): the interactive queue's items come first, then a
// higher-priority queue's items all come before a lower one's,
// and within equal priorities the earlier submission comes first, whatever
// the queue. Items are told apart by (JobID, Instance), so any input order
// gives the same result. It does not allocate.
func Order(items []Item) {
	slices.SortFunc(items, Compare)
}
