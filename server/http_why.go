package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// handleWhy explains, for each queued instance of a job, why it waits: the
// scheduler's own pass is replayed over the current state and the
// matcher's rejections for that job's instances are reported. For a job
// held for its dependencies, each held instance names the jobs it waits
// for.
func (s *Server) handleWhy(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	var (
		out []client.WhyInstance
		err error
	)
	s.fsm.Read(func(v fsm.View) {
		var j *fsm.Job
		if j, err = lookupJob(v, ref); err != nil {
			return
		}
		now := time.Now()
		out = []client.WhyInstance{}
		if j.State() == fsm.JobHeld {
			out = whyHeld(v, j)
			return
		}
		planner.New(v, s.liveness(now), now).Site(s.sitePolicy(v), nil).Explain().Run(func(it queue.Item, in *fsm.Instance, res matcher.Result, h *planner.Held) {
			if it.JobID != j.ID {
				return
			}
			out = append(out, whyInstance(in, res, h, now))
		})
	})
	if err != nil {
		s.writeError(w, statusOf(err), err)
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

// whyInstance renders the planner's answer for one instance as the
// sentence netstatus --why prints.
func whyInstance(in *fsm.Instance, res matcher.Result, h *planner.Held, now time.Time) client.WhyInstance {
	w := client.WhyInstance{Instance: in.Index, Attempt: in.Attempt}
	switch {
	case h != nil:
		w.Reason = h.Reason
	case in.NotBefore.After(now):
		w.Reason = "restarting after a backoff until " + in.NotBefore.UTC().Format(time.RFC3339)
	case res.Machine >= 0:
		w.Reason = "a machine is free: it will be placed on the scheduler's next pass"
	case res.Matching > 0 && onlyAsleep(res):
		w.Reason = "no matching machine is awake: " + res.Why()
		w.Rejections = rejections(res)
	case res.Matching > 0 && onlyState(res):
		w.Reason = "all " + strconv.Itoa(res.Matching) + " matching machines are busy: " + res.Why()
		w.Rejections = rejections(res)
	default:
		w.Reason = res.Why()
		w.Rejections = rejections(res)
	}
	return w
}

// onlyState reports whether every rejection is about the machines' state
// now (busy, down, asleep), not about what the job requires.
func onlyState(res matcher.Result) bool {
	for _, r := range res.Rejections {
		switch r.Filter {
		case matcher.FilterBinary, matcher.FilterKeys, matcher.FilterAttrs, matcher.FilterMounts,
			matcher.FilterMachines, matcher.FilterReservation:
			return false
		}
	}
	return true
}

// onlyAsleep reports whether every rejection is of an asleep machine:
// the work waits for owners, not for capacity.
func onlyAsleep(res matcher.Result) bool {
	for _, r := range res.Rejections {
		if r.Filter != matcher.FilterAwake {
			return false
		}
	}
	return len(res.Rejections) > 0
}

// rejections lists the matcher's rejections in wire form.
func rejections(res matcher.Result) []client.Rejection {
	var out []client.Rejection
	for _, rj := range res.Rejections {
		out = append(out, client.Rejection{Filter: rj.Filter, Count: rj.Count, Reason: rj.Reason})
	}
	return out
}
