package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/netmgr/netmgr/client"
)

// restartable reports whether the spec has a restart policy.
func restartable(s client.JobSpec) bool {
	return s.Restart == client.RestartOnFailure || s.Restart == client.RestartAlways
}

// checkDB judges the database (a consistent read at the end) against the
// acknowledged submits: every acknowledged job must be there, and every
// instance of a restartable job must have exited 0 (the workload's jobs
// all succeed by their last allowed attempt). Notes are what is worth
// saying but breaks no rule: non-restartable instances lost or unfinished.
func checkDB(acks []ack, jobs map[uint64]client.Job) (vs []violation, notes []string) {
	sorted := slices.SortedFunc(slices.Values(acks), func(a, b ack) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range sorted {
		job, ok := jobs[a.ID]
		if !ok {
			vs = append(vs, violation{Kind: vLost, Job: a.ID, Instance: -1,
				Detail: fmt.Sprintf("acknowledged at %s but missing from the database", a.At.Format("15:04:05.000"))})
			continue
		}
		if len(job.Instances) != a.Instances {
			vs = append(vs, violation{Kind: vLost, Job: a.ID, Instance: -1,
				Detail: fmt.Sprintf("submitted with %d instances, the database has %d", a.Instances, len(job.Instances))})
		}
		for _, in := range job.Instances {
			where := fmt.Sprintf("attempt %d on %q", in.Attempt, in.Machine)
			if in.Reason != "" || in.Error != "" {
				where += fmt.Sprintf(" (%s)", cmp.Or(in.Reason, in.Error))
			}
			switch {
			case in.State == client.InstanceCancelled && job.State == client.JobCancelled:
				// Never ran: a dependency decided so. checkDeps judges it.
			case restartable(job.Spec) && in.State != client.InstanceExited:
				vs = append(vs, violation{Kind: vLost, Job: a.ID, Instance: in.Index,
					Detail: fmt.Sprintf("restart=%s but the instance ended %s, not exited 0: %s", job.Spec.Restart, describe(in), where)})
			case !restartable(job.Spec) && !in.Finished():
				notes = append(notes, fmt.Sprintf("job %d instance %d (no restart policy) is still %s: %s", a.ID, in.Index, in.State, where))
			case !restartable(job.Spec) && in.State == client.InstanceLost:
				notes = append(notes, fmt.Sprintf("job %d instance %d (no restart policy) is lost: %s", a.ID, in.Index, where))
			}
		}
	}
	return vs, notes
}

// describe is an instance's state with its exit status or signal.
func describe(in client.Instance) string {
	switch {
	case in.Signal != "":
		return in.State + "(" + in.Signal + ")"
	case in.State == client.InstanceFailed || in.State == client.InstanceExited:
		return fmt.Sprintf("%s(%d)", in.State, in.ExitCode)
	}
	return in.State
}

// serverView is one server's own copy of the jobs (a ?stale read): the
// applied index the answer carried and a hash of the jobs.
type serverView struct {
	Name  string
	Index uint64
	Hash  string
	Jobs  int
	Err   error
}

// hashJobs hashes the jobs in id order as JSON.
func hashJobs(jobs []client.Job) (string, error) {
	sorted := slices.SortedFunc(slices.Values(jobs), func(a, b client.Job) int { return cmp.Compare(a.ID, b.ID) })
	data, err := json.Marshal(sorted)
	if err != nil {
		return "", fmt.Errorf("hash jobs: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// compareViews judges one round of server views. Servers agree when all
// answered at the same index with the same hash. Otherwise each server
// that failed to answer, is at another index than the highest, or has a
// hash other than the most common one at that index is returned as
// diverged; the caller retries while views may still converge and keeps
// the last verdict.
func compareViews(views []serverView) []violation {
	var top uint64
	for _, v := range views {
		if v.Err == nil {
			top = max(top, v.Index)
		}
	}
	count := map[string]int{}
	for _, v := range views {
		if v.Err == nil && v.Index == top {
			count[v.Hash]++
		}
	}
	var ref string
	for _, h := range slices.Sorted(maps.Keys(count)) {
		if count[h] > count[ref] {
			ref = h
		}
	}
	var vs []violation
	for _, v := range views {
		var detail string
		switch {
		case v.Err != nil:
			detail = fmt.Sprintf("server %s: could not read its jobs: %v", v.Name, v.Err)
		case v.Index != top:
			detail = fmt.Sprintf("server %s is at index %d, others at %d", v.Name, v.Index, top)
		case v.Hash != ref:
			detail = fmt.Sprintf("server %s at index %d has jobs hash %s (%d jobs), %d others have %s",
				v.Name, v.Index, v.Hash, v.Jobs, count[ref], ref)
		default:
			continue
		}
		vs = append(vs, violation{Kind: vDiverged, Instance: -1, Detail: detail})
	}
	return vs
}
