package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// handleReservations lists the reservations in the database.
func (s *Server) handleReservations(w http.ResponseWriter, r *http.Request) {
	out := []client.Reservation{}
	s.fsm.Read(func(v fsm.View) {
		for _, res := range v.Reservations() {
			out = append(out, reservationToWire(res))
		}
	})
	s.writeJSON(w, http.StatusOK, out)
}

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

// handleUnreserve ends the requesting user's reservations: one by id, those
// holding any of the named machines, or all of them. An admin may end
// anyone's by id.
func (s *Server) handleUnreserve(w http.ResponseWriter, r *http.Request) {
	var req client.UnreserveRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read unreserve request: %w", err))
		return
	}
	p := principalOf(r)
	user := p.User
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
				if !mayActFor(db, rv.Owner, p) {
					deny = fmt.Errorf("unreserve %d: %w: it belongs to %s", rv.ID, errPermission, rv.Owner)
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
