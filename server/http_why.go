package server

import (
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
)

// handleWhy explains, for each queued instance of a job, why it waits: the
// scheduler's own pass is replayed over the current state and the
// matcher's rejections for that job's instances are reported.
func (s *Server) handleWhy(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	var (
		out   []client.WhyInstance
		found bool
	)
	s.fsm.Read(func(v fsm.View) {
		j, ok := lookupJob(v, ref)
		if !ok {
			return
		}
		found = true
		now := time.Now()
		out = []client.WhyInstance{}
		s.newPlanner(v, now).run(func(it queue.Item, in *fsm.Instance, res matcher.Result) {
			if it.JobID != j.ID {
				return
			}
			out = append(out, whyInstance(in, res, now))
		})
	})
	if !found {
		s.writeError(w, http.StatusNotFound, errNoJob(ref))
		return
	}
	s.writeJSON(w, http.StatusOK, out)
}

func whyInstance(in *fsm.Instance, res matcher.Result, now time.Time) client.WhyInstance {
	w := client.WhyInstance{Instance: in.Index, Attempt: in.Attempt}
	switch {
	case in.NotBefore.After(now):
		w.Reason = "restarting after a backoff until " + in.NotBefore.UTC().Format(time.RFC3339)
	case res.Machine >= 0:
		w.Reason = "a machine is free: it will be placed on the scheduler's next pass"
	default:
		w.Reason = res.Why()
		for _, rj := range res.Rejections {
			w.Rejections = append(w.Rejections, client.Rejection{Filter: rj.Filter, Count: rj.Count, Reason: rj.Reason})
		}
	}
	return w
}
