package server

import (
	"fmt"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
)

// pickReservable chooses rq.N machines that accept work, meet rq.Require
// and are free of other users' reservations over the window, least loaded
// first (planner.Reservable).
func (s *Server) pickReservable(user string, rq client.ReserveRequest, from, until time.Time) ([]string, error) {
	spec := fsm.JobSpec{}
	if rq.Require != nil {
		spec = specFromWire(*rq.Require)
	}
	spec.Binaries = map[string]string{fsm.AnyKey: "-"}
	var (
		picked []string
		why    string
	)
	s.fsm.Read(func(v fsm.View) {
		picked, why = planner.Reservable(v, s.liveness(time.Now()), user, spec, rq.N, from, until)
	})
	if len(picked) < rq.N {
		return nil, fmt.Errorf("reserve %d machines: %w: found %d (%s)", rq.N, errNoMachines, len(picked), why)
	}
	return picked, nil
}

// expireReservations ends the reservations whose window has passed. The
// leader runs it on its ticks; the scheduler already ignores a reservation
// past its end, so this only tidies the database.
func (s *Server) expireReservations(now time.Time) {
	var ids []uint64
	s.fsm.Read(func(v fsm.View) {
		for _, r := range v.Reservations() {
			if !r.Until.IsZero() && !now.Before(r.Until) {
				ids = append(ids, r.ID)
			}
		}
	})
	if len(ids) == 0 {
		return
	}
	if _, err := s.apply(fsm.UnreserveType, fsm.Unreserve{At: now.UTC(), By: s.cfg.Name, IDs: ids}); err != nil {
		s.log.Warn("expire reservations failed", "ids", ids, "err", err)
	}
}
