package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

func reservationToWire(r *fsm.Reservation) client.Reservation {
	return client.Reservation{ID: r.ID, Owner: r.Owner, Machines: clone(r.Machines), From: r.From, Until: r.Until}
}

func (s *Server) handleReservations(w http.ResponseWriter, r *http.Request) {
	out := []client.Reservation{}
	s.fsm.Read(func(v fsm.View) {
		for _, res := range v.Reservations() {
			out = append(out, reservationToWire(res))
		}
	})
	s.writeJSON(w, http.StatusOK, out)
}

// errNoMachines means a reservation by requirements found too few machines.
var errNoMachines = errors.New("not enough machines")

// handleReserve sets machines aside for the requesting user: the named
// ones, or the N least loaded machines that meet the requirements and are
// not reserved by anyone else during the window.
func (s *Server) handleReserve(w http.ResponseWriter, r *http.Request) {
	var req client.ReserveRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read reserve request: %w", err))
		return
	}
	user := requestUser(r)
	now := time.Now().UTC()
	from := req.From.UTC()
	if req.From.IsZero() {
		from = now
	}
	var until time.Time
	switch {
	case req.For < 0:
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("reserve: --for %v must be positive", req.For))
		return
	case req.For > 0:
		until = from.Add(req.For)
	}
	machines := req.Machines
	if len(machines) == 0 {
		if req.N <= 0 {
			s.writeError(w, http.StatusBadRequest, errors.New("reserve: name machines, or ask for N machines meeting requirements"))
			return
		}
		var err error
		if machines, err = s.pickReservable(user, req, from, until); err != nil {
			s.writeError(w, http.StatusConflict, err)
			return
		}
	}
	res, err := s.apply(fsm.ReserveType, fsm.Reserve{At: now, Owner: user, Machines: machines, From: from, Until: until})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), res.Err)
		return
	}
	var out client.Reservation
	s.fsm.Read(func(v fsm.View) {
		for _, rv := range v.Reservations() {
			if rv.ID == res.ReservationID {
				out = reservationToWire(rv)
			}
		}
	})
	s.writeJSON(w, http.StatusOK, out)
}

// pickReservable chooses rq.N machines that accept work, meet rq.Require
// and are free of other users' reservations over the window, least loaded
// first (the matcher's own ranking).
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
		taken := reservedDuring(v, user, from, until)
		gossip := s.pool(time.Now())
		ms := v.Machines()
		views := make([]matcher.MachineView, len(ms))
		for i, m := range ms {
			views[i] = machineView(v, m, gossip[m.Name], from)
			// A reservation needs the machine, not a free slot now.
			views[i].Running = 0
			views[i].ReservedBy = ""
			if taken[m.Name] {
				views[i].ReservedBy = "another user"
			}
		}
		pool := matcher.NewPool(views)
		mt := matcher.New()
		req := matchRequest(&fsm.Job{Owner: user, Spec: spec}, &fsm.Instance{})
		req.MaxPerMachine = 1
		for len(picked) < rq.N {
			res := mt.MatchPool(req, pool)
			if res.Machine < 0 {
				why = res.Why()
				return
			}
			picked = append(picked, ms[res.Machine].Name)
			pool.Take(res.Machine, req)
		}
	})
	if len(picked) < rq.N {
		return nil, fmt.Errorf("reserve %d machines: %w: found %d (%s)", rq.N, errNoMachines, len(picked), why)
	}
	slices.Sort(picked)
	return picked, nil
}

// reservedDuring names the machines another user holds during the window.
func reservedDuring(v fsm.View, user string, from, until time.Time) map[string]bool {
	out := make(map[string]bool)
	for _, r := range v.Reservations() {
		if r.Owner == user {
			continue
		}
		endsFirst := !r.Until.IsZero() && !r.Until.After(from)
		startsAfter := !until.IsZero() && !until.After(r.From)
		if !endsFirst && !startsAfter {
			for _, m := range r.Machines {
				out[m] = true
			}
		}
	}
	return out
}

// handleUnreserve ends the requesting user's reservations: one by id, those
// holding any of the named machines, or all of them. An admin may end
// anyone's by id.
func (s *Server) handleUnreserve(w http.ResponseWriter, r *http.Request) {
	var req client.UnreserveRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read unreserve request: %w", err))
		return
	}
	user := requestUser(r)
	var (
		ids   []uint64
		ended []client.Reservation
		deny  error
	)
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		for _, rv := range v.Reservations() {
			mine := rv.Owner == user
			switch {
			case req.ID != 0 && rv.ID == req.ID:
				if !mine && user != "root" && !db.IsAdmin(user) {
					deny = fmt.Errorf("unreserve %d: %w: it belongs to %s", rv.ID, errNotOwner, rv.Owner)
					return
				}
			case req.ID != 0:
				continue
			case !mine:
				continue
			case len(req.Machines) > 0 && !slices.ContainsFunc(rv.Machines, func(m string) bool { return slices.Contains(req.Machines, m) }):
				continue
			}
			ids = append(ids, rv.ID)
			ended = append(ended, reservationToWire(rv))
		}
	})
	if deny != nil {
		s.writeError(w, http.StatusForbidden, deny)
		return
	}
	if len(ids) == 0 {
		s.writeError(w, http.StatusNotFound, fmt.Errorf("unreserve: %s holds no matching reservation", user))
		return
	}
	if _, err := s.apply(fsm.UnreserveType, fsm.Unreserve{At: time.Now().UTC(), By: user, IDs: ids}); err != nil {
		s.writeApplyError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, client.UnreserveResponse{Ended: ended})
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
