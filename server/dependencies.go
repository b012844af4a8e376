package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// errAmbiguousJob refuses a dependency named by a symb_name that several
// jobs carry, none of them alone still unfinished.
var errAmbiguousJob = errors.New("ambiguous job name")

// resolveDependencies turns the jobs a spec waits for, named by id or
// symb_name, into ids, in out's After, AfterOK and AfterNotOK. An id must
// name a job; a name must name exactly one job, or several of which
// exactly one has not ended (the run of a chain now in progress).
func resolveDependencies(v fsm.View, in client.JobSpec, out *fsm.JobSpec) error {
	for _, d := range []struct {
		kind string
		refs []string
		ids  *[]uint64
	}{
		{fsm.DepAfter, in.After, &out.After},
		{fsm.DepAfterOK, in.AfterOK, &out.AfterOK},
		{fsm.DepAfterNotOK, in.AfterNotOK, &out.AfterNotOK},
	} {
		*d.ids = nil
		for _, ref := range d.refs {
			id, err := resolveJobRef(v, ref)
			if err != nil {
				return fmt.Errorf("%s=%s: %w", d.kind, ref, err)
			}
			*d.ids = append(*d.ids, id)
		}
	}
	return nil
}

// resolveJobRef resolves one dependency reference.
func resolveJobRef(v fsm.View, ref string) (uint64, error) {
	if id, err := strconv.ParseUint(ref, 10, 64); err == nil {
		if _, ok := v.Job(id); !ok {
			if v.JobExpired(id) {
				return 0, errJobExpired(id)
			}
			return 0, fmt.Errorf("no job with id %d: %w", id, fsm.ErrNoSuchJob)
		}
		return id, nil
	}
	jobs := v.JobsNamed(ref)
	switch len(jobs) {
	case 0:
		return 0, fmt.Errorf("no job named %s: %w", ref, fsm.ErrNoSuchJob)
	case 1:
		return jobs[0].ID, nil
	}
	var unfinished []*fsm.Job
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = strconv.FormatUint(j.ID, 10)
		if st := j.State(); st == fsm.JobQueued || st == fsm.JobRunning || st == fsm.JobHeld {
			unfinished = append(unfinished, j)
		}
	}
	if len(unfinished) == 1 {
		return unfinished[0].ID, nil
	}
	return 0, fmt.Errorf("%d jobs are named %s (ids %s), %d of them unfinished: name one by id: %w",
		len(jobs), ref, strings.Join(ids, ", "), len(unfinished), errAmbiguousJob)
}

// dependenciesToWire renders a job's dependencies with how each stands.
func dependenciesToWire(v fsm.View, j *fsm.Job) []client.Dependency {
	deps := j.Spec.Dependencies()
	if len(deps) == 0 {
		return nil
	}
	out := make([]client.Dependency, len(deps))
	for i, dep := range deps {
		other, _ := v.Job(dep.JobID)
		d := client.Dependency{Kind: dep.Kind, JobID: dep.JobID}
		if other != nil {
			d.Name, d.State = other.Name, jobStateToWire(other.State())
		}
		switch dep.Verdict(other) {
		case fsm.DepWaiting:
			d.Verdict = client.DepWaiting
		case fsm.DepSatisfied:
			d.Verdict = client.DepSatisfied
		default:
			d.Verdict = client.DepNever
		}
		out[i] = d
	}
	return out
}

// jobStateToWire names a job state as the API does: held and cancelled
// say why.
func jobStateToWire(state string) string {
	switch state {
	case fsm.JobHeld:
		return client.JobHeld
	case fsm.JobCancelled:
		return client.JobCancelled
	}
	return state
}

// idsToWire renders resolved dependency ids as the spec's references.
func idsToWire(ids []uint64) []string {
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatUint(id, 10)
	}
	return out
}

// whyHeld explains each held instance of j: "waits for job 12 (running)",
// naming every dependency that has not decided.
func whyHeld(v fsm.View, j *fsm.Job) []client.WhyInstance {
	var waits []string
	for _, d := range dependenciesToWire(v, j) {
		if d.Verdict != client.DepWaiting {
			continue
		}
		w := fmt.Sprintf("job %d (%s)", d.JobID, d.State)
		if d.Kind != fsm.DepAfter {
			w = fmt.Sprintf("job %d (%s) to %s", d.JobID, d.State, map[string]string{
				fsm.DepAfterOK: "succeed", fsm.DepAfterNotOK: "fail",
			}[d.Kind])
		}
		waits = append(waits, w)
	}
	reason := "held(dependency): waits for " + strings.Join(waits, ", ")
	var out []client.WhyInstance
	for i := range j.Instances {
		if in := &j.Instances[i]; in.State == fsm.InstanceHeld {
			out = append(out, client.WhyInstance{Instance: in.Index, Attempt: in.Attempt, Reason: reason})
		}
	}
	return out
}
