package server

import (
	"net/http"
	"slices"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// startFairShare commits FairShareStart once every server applies it and
// fair share is not on yet, so no replica applies an end without
// charging it (fsm/fairshare.go). A failure is retried on the next
// membership pass.
func (s *Server) startFairShare() {
	if !s.groupApplies(fsm.FairShareStartType) {
		return
	}
	on := false
	s.fsm.Read(func(v fsm.View) { on = v.FairShareOn() })
	if on {
		return
	}
	res, err := s.apply(fsm.FairShareStartType, fsm.FairShareStart{At: time.Now().UTC()})
	switch {
	case err != nil:
		s.log.Warn("start fair share failed", "err", err)
	case res.Err != nil:
		s.log.Warn("fair share start refused", "err", res.Err)
	case !res.Stale:
		s.log.Info("fair share on", "index", res.Index)
	}
}

// handleShare lists the fair-share accounts and their users (netmgr
// share), for any signed-in user: usage is not secret among a pool's
// users, as sshare shows it to all.
func (s *Server) handleShare(w http.ResponseWriter, r *http.Request) {
	var out client.ShareReport
	s.fsm.Read(func(v fsm.View) { out = shareReport(v, time.Now()) })
	s.writeJSON(w, http.StatusOK, out)
}

// shareReport builds the report from one view; usage is decayed to now
// (or the latest charge, if later), for people: the order itself never
// reads a clock.
func shareReport(v fsm.View, now time.Time) client.ShareReport {
	hl := v.HalfLife()
	out := client.ShareReport{On: v.FairShareOn(), HalfLifeSeconds: int64(hl / time.Second), Rows: []client.ShareRow{}}
	at := max(now.UnixMilli(), v.UsageAt())
	members := map[string][]string{}
	seen := map[string]bool{}
	addUser := func(u string) {
		if !seen[u] {
			seen[u] = true
			a := v.AccountOf(u)
			members[a] = append(members[a], u)
		}
	}
	db, _ := v.Database()
	for _, a := range db.Accounts {
		if _, ok := members[a.Name]; !ok {
			members[a.Name] = nil // listed even with no user yet
		}
		for _, u := range a.Users {
			addUser(u)
		}
	}
	users, accounts := v.UsageNames()
	for _, u := range users {
		addUser(u)
	}
	totals := v.UserTotals()
	for u := range totals {
		addUser(u)
	}
	for _, a := range accounts {
		if _, ok := members[a]; !ok {
			members[a] = nil
		}
	}
	names := make([]string, 0, len(members))
	for a := range members {
		names = append(names, a)
	}
	slices.Sort(names)
	seconds := func(u queue.Usage) float64 { return float64(u.ValueAt(at, hl)) / 1000 }
	for _, a := range names {
		row := client.ShareRow{Account: a, Share: v.AccountShare(a), Usage: seconds(v.AccountUsage(a)), Factor: planner.AccountFactor(v, a)}
		var rows []client.ShareRow
		us := members[a]
		slices.Sort(us)
		for _, u := range us {
			t := totals[u]
			row.Running += t.Active
			row.Waiting += t.Waiting
			rows = append(rows, client.ShareRow{Account: a, User: u, Share: v.UserShare(u), Usage: seconds(v.UserUsage(u)),
				Factor: planner.UserFactor(v, u), Running: t.Active, Waiting: t.Waiting})
		}
		out.Rows = append(append(out.Rows, row), rows...)
	}
	return out
}
