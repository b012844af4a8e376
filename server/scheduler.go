package server

import (
	"fmt"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// schedule is the leader's scheduling duty: one planner pass over the
// database, committed as one Place.
func (s *Server) schedule() error {
	start, placed := time.Now(), 0
	defer func() { s.metrics.schedulePass(start, placed) }()
	var plan fsm.Place
	var failed error // the site policy's priority, when it failed
	s.fsm.Read(func(v fsm.View) {
		if v.QueuedCount() == 0 {
			return // most commits (CHILD events) leave nothing to place
		}
		now := time.Now()
		plan = planner.New(v, s.liveness(now), now).Site(s.sitePolicy(v), func(err error) { failed = err }).Place()
	})
	if failed != nil {
		s.recordPolicyError("priority", failed)
	}
	if len(plan.Assignments) == 0 {
		return nil
	}
	plan.At = time.Now().UTC()
	res, err := s.apply(fsm.PlaceType, plan)
	if err != nil {
		return fmt.Errorf("commit placement: %w", err)
	}
	placed = len(res.Accepted)
	if res.Dropped > 0 {
		s.log.Info("placement re-check dropped assignments", "dropped", res.Dropped, "accepted", len(res.Accepted))
	}
	return nil
}
