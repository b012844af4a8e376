package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/history"
)

// historyWait bounds how long a read of the history waits for the writer
// to reach what the state has applied.
const historyWait = 5 * time.Second

// rangeLimit is about how many records one answer to
// /v1/history/range carries; the asker comes back for the rest.
const rangeLimit = 5000

// errNoHistory answers history reads on a server without a data dir.
var errNoHistory = errors.New("this server keeps no history (it has no data dir)")

// handleHistory answers GET /v1/history?user=&state=&queue=&machine=
// &job=&since=&until= (times RFC 3339): the ended attempts the filters select,
// by end time. A user sees their own jobs' attempts; an admin_id or root
// on a pool machine anyone's (all without user=).
func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	if s.hist == nil {
		s.writeError(w, http.StatusNotFound, errNoHistory)
		return
	}
	q := r.URL.Query()
	f := history.Filter{User: q.Get("user"), State: q.Get("state"), Queue: q.Get("queue"), Machine: q.Get("machine")}
	var err error
	if j := q.Get("job"); j != "" {
		if f.Job, err = strconv.ParseUint(j, 10, 64); err != nil || f.Job == 0 {
			err = fmt.Errorf("history job=%q: not a job id", j)
		}
	}
	if err == nil {
		f.Since, err = queryTime(q.Get("since"), "since")
	}
	if err == nil {
		f.Until, err = queryTime(q.Get("until"), "until")
	}
	if err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	p := principalOf(r)
	var admin bool
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		admin = mayAdminister(db, p)
	})
	switch {
	case admin:
	case f.User == "":
		f.User = p.User
	case f.User != p.User:
		s.deny(w, r, p, &denial{http.StatusForbidden, denyNotPermitted,
			fmt.Errorf("history of %s: %w: only an admin_id or root on a pool machine sees other users' jobs, and you are %s", f.User, errPermission, p)})
		return
	}
	s.historyCaughtUp(r.Context())
	as, err := s.hist.db.Attempts(f)
	if err != nil {
		s.writeError(w, http.StatusInternalServerError, err)
		return
	}
	out := make([]client.HistoryAttempt, len(as))
	for i, a := range as {
		out[i] = attemptToWire(a)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// handleHistoryRange answers another server's GET
// /v1/history/range?after=A&through=T: the records of the entries after
// A through T (or fewer, up to the answer's up_to), 409 when this server
// lacks some of them. Servers only.
func (s *Server) handleHistoryRange(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r)
	if p.Server == "" && !p.Insecure {
		s.deny(w, r, p, &denial{http.StatusForbidden, denyWrongRole,
			fmt.Errorf("%s %s is for servers: %s holds no server certificate (%w)", r.Method, r.URL.Path, p, errPermission)})
		return
	}
	if s.hist == nil {
		s.writeError(w, http.StatusNotFound, errNoHistory)
		return
	}
	q := r.URL.Query()
	after, err1 := strconv.ParseUint(q.Get("after"), 10, 64)
	through, err2 := strconv.ParseUint(q.Get("through"), 10, 64)
	if err := errors.Join(err1, err2); err != nil || through < after {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("history range after=%q through=%q: not a range of indexes", q.Get("after"), q.Get("through")))
		return
	}
	entries, upTo, err := s.hist.db.Range(after, through, rangeLimit)
	switch {
	case errors.Is(err, history.ErrNotCovered):
		s.writeError(w, http.StatusConflict, err)
		return
	case err != nil:
		s.writeError(w, http.StatusInternalServerError, err)
		return
	}
	out := client.HistoryRange{UpTo: upTo, Entries: make([]client.HistoryRangeEntry, len(entries))}
	for i, e := range entries {
		we := client.HistoryRangeEntry{Index: e.Index}
		for _, ev := range e.Events {
			we.Events = append(we.Events, eventToWireHistory(ev))
		}
		for _, a := range e.Attempts {
			we.Attempts = append(we.Attempts, attemptToWire(a))
		}
		out.Entries[i] = we
	}
	s.writeJSON(w, http.StatusOK, out)
}

// historyCaughtUp waits, up to historyWait, until the history holds what
// the state had applied when it was called, so that a read right after a
// change sees it.
func (s *Server) historyCaughtUp(ctx context.Context) {
	want, _ := s.fsm.Watch()
	ctx, cancel := context.WithTimeout(ctx, historyWait)
	defer cancel()
	for {
		changed := s.hist.changed()
		if n, err := s.hist.db.Applied(); err != nil || n >= want {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// queryTime parses an RFC 3339 time from a query parameter; empty is the
// zero time.
func queryTime(v, name string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s=%q: not an RFC 3339 time: %w", name, v, err)
	}
	return t, nil
}
