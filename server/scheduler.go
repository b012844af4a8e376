package server

import (
	"fmt"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// schedule is the leader's scheduling duty: one planner pass over the
// database, committed as one Place, preceded by the resumes of instances
// suspended for a preemptor that has ended and followed by the pass's
// preemption, each its own Preempt entry (server/planner/preempt.go).
// cache keeps the machines' views between the leader's passes, and live
// their liveness (refreshed here on every call, passing or not).
func (s *Server) schedule(cache *planner.Cache, live *liveKeeper) error {
	start, placed := time.Now(), 0
	defer func() { s.metrics.schedulePass(start, placed) }()
	var (
		plan    fsm.Place
		resumes []fsm.Preempt
		preempt fsm.Preempt
		ok      bool
		failed  error // the site policy's priority, when it failed
	)
	live.refresh(time.Now())
	s.fsm.Read(func(v fsm.View) {
		if v.QueuedCount() == 0 && v.LentCount() == 0 {
			return // most commits (CHILD events) leave nothing to place
		}
		now := time.Now()
		if v.LentCount() == 0 && !planner.MayPlace(v, func(m string) bool { return s.stubUp(m, now) }) {
			return // a full pool: a waiting backlog costs a look at the counts
		}
		l, changed, all := live.take()
		p := cache.PassChanged(v, l, changed, all, now).Site(s.sitePolicy(v), func(err error) { failed = err }).Limit(planner.MaxPlace)
		resumes = p.Resumes()
		plan = p.Place()
		preempt, ok = p.Preemption()
	})
	if failed != nil {
		s.recordPolicyError("priority", failed)
	}
	for _, r := range resumes {
		r.At = time.Now().UTC()
		if _, err := s.apply(fsm.PreemptType, r); err != nil {
			return fmt.Errorf("commit resume of preempted instances: %w", err)
		}
	}
	if len(plan.Assignments) > 0 {
		plan.At = time.Now().UTC()
		res, err := s.apply(fsm.PlaceType, plan)
		if err != nil {
			return fmt.Errorf("commit placement: %w", err)
		}
		placed = len(res.Accepted)
		if res.Dropped > 0 {
			s.log.Info("placement re-check dropped assignments", "dropped", res.Dropped, "accepted", len(res.Accepted))
		}
	}
	if ok {
		preempt.At = time.Now().UTC()
		res, err := s.apply(fsm.PreemptType, preempt)
		if err != nil {
			return fmt.Errorf("commit preemption: %w", err)
		}
		s.log.Info("preempted for a waiting job", "job", preempt.Preemptor, "victims", res.Affected, "dropped", res.Dropped)
	}
	return nil
}
