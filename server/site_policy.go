package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/planner"
	"github.com/netmgr/netmgr/server/policy"
)

// The site policy script (package server/policy, fsm.PolicyLoad, command
// level 45). An admin's load is compiled here before it is proposed, so
// a script with an error never reaches the log; each server compiles a
// committed load once (policy.Cache), outside Apply. admit runs on the
// leader at submit, and what it decides (a refusal, or the changed queue
// or time limit) is what the committed Submit holds; priority runs in
// the leader's pass over replicated values only (planner.Pass.Site). A
// call that fails is counted in netmgr_server_policy_errors_total, logged
// and recorded as a policy-error event (a PolicyLoad of op error, with
// IgnoreUnknownFlag), each distinct failure at most once a minute; the
// built-in order or acceptance applies.

// policyNoteEvery is how often one failure (the same function, line and
// message) is logged and recorded at most.
const policyNoteEvery = time.Minute

// policyNoteKeys bounds the failures remembered for rate limiting.
const policyNoteKeys = 64

// siteState is the compiled script and the failures' rate limit.
type siteState struct {
	cache policy.Cache
	notes policyNotes
}

// policyNotes rate-limits the records of failures: each distinct
// failure (its text) at most once per policyNoteEvery, counting the
// ones left out. Safe for concurrent use.
type policyNotes struct {
	mu    sync.Mutex             // guards notes
	notes map[string]*policyNote // by the failure's text
}

// policyNote is when a failure was last recorded and how many like it
// were not recorded since.
type policyNote struct {
	last    time.Time
	repeats int
}

// note reports whether the failure key, seen at now, is to be recorded,
// and how many like it were left out since the last record.
func (p *policyNotes) note(key string, now time.Time) (record bool, repeats int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.notes == nil || len(p.notes) >= policyNoteKeys {
		p.notes = map[string]*policyNote{}
	}
	n, ok := p.notes[key]
	if ok && now.Sub(n.last) < policyNoteEvery {
		n.repeats++
		return false, 0
	}
	if !ok {
		n = &policyNote{}
		p.notes[key] = n
	}
	repeats, n.last, n.repeats = n.repeats, now, 0
	return true, repeats
}

// sitePolicy is the compiled script of v's policy, nil when none (or,
// which the leader's check before proposing prevents, when it does not
// compile).
func (s *Server) sitePolicy(v fsm.View) *policy.Program {
	pol := v.Policy()
	if pol == nil {
		return nil
	}
	prog, err := s.site.cache.Get(pol.LoadIndex, pol.Source)
	if err != nil {
		s.log.Error("site policy does not compile; the built-in order and acceptance apply", "index", pol.LoadIndex, "err", err)
		return nil
	}
	return prog
}

// policyFailed counts a failed call of fn and reports whether it is to
// be recorded now (the first like it for a minute), with how many like
// it were not, logging it when so; it never blocks on Raft.
func (s *Server) policyFailed(fn string, err error) (record bool, repeats int) {
	s.metrics.policyErrors.WithLabelValues(fn).Inc()
	record, repeats = s.site.notes.note(err.Error(), time.Now())
	if record {
		s.log.Warn("site policy failed; the built-in order or acceptance applies", "function", fn, "err", err, "repeats", repeats)
	}
	return record, repeats
}

// recordPolicyError commits a policy-error event for err, when
// policyFailed says to.
func (s *Server) recordPolicyError(fn string, err error) {
	record, repeats := s.policyFailed(fn, err)
	if !record {
		return
	}
	if _, aerr := s.apply(fsm.PolicyLoadType|fsm.IgnoreUnknownFlag, fsm.PolicyLoad{
		At: time.Now().UTC(), Op: fsm.PolicyOpError, Error: err.Error(), Repeats: repeats,
	}); aerr != nil {
		s.log.Warn("record site policy failure", "err", aerr)
	}
}

// admitSite runs the script's admit on c, on the leader, before c is
// proposed: a refusal is an error with a 403 naming the site policy; a
// change of queue, time limit or job priority is made to c.Spec (Apply
// then checks it against the queue and fsm.MaxJobPriority as it checks
// any submit; policy.Admit has already refused a priority out of range). A call that fails accepts
// c unchanged.
func (s *Server) admitSite(c *fsm.Submit) (int, error) {
	var prog *policy.Program
	var job policy.Job
	var user policy.User
	s.fsm.Read(func(v fsm.View) {
		if prog = s.sitePolicy(v); !prog.HasAdmit() {
			return
		}
		q := c.Spec.Queue
		if q == "" {
			q = fsm.DefaultQueue
		}
		job = planner.SiteJob(0, c.Owner, q, &c.Spec, c.At, c.Spec.Min, planner.SitePool(v))
		user = planner.SiteUser(v, c.Owner, v.UserTotals())
	})
	if !prog.HasAdmit() {
		return 0, nil
	}
	d, err := prog.Admit(job, user)
	if err != nil {
		s.recordPolicyError("admit", err)
		return 0, nil
	}
	if d.Refuse != "" {
		return http.StatusForbidden, fmt.Errorf("%w: %s", errSitePolicy, d.Refuse)
	}
	if d.Queue != "" {
		c.Spec.Queue = d.Queue
	}
	if d.TimeLimitSeconds > 0 {
		c.Spec.TimeLimitSeconds = d.TimeLimitSeconds
	}
	if d.Priority != 0 {
		c.Spec.Priority = d.Priority
	}
	return 0, nil
}

// handleLoadPolicy installs or clears the site policy script, for an
// admin, as one PolicyLoad; a script that does not compile changes
// nothing (400 naming its line and column).
func (s *Server) handleLoadPolicy(w http.ResponseWriter, r *http.Request) {
	var req client.PolicyRequest
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read policy request: %w", err))
		return
	}
	action := "load the site policy"
	if req.Clear {
		action = "clear the site policy"
	}
	user, ok := s.requireAdmin(w, r, action)
	if !ok {
		return
	}
	if !s.groupSupports(fsm.FeaturePolicy) {
		s.writeError(w, http.StatusConflict, fmt.Errorf("%s: %s: %w", action, fsm.FeaturePolicy.Name, errUpgradeFirst))
		return
	}
	c := fsm.PolicyLoad{At: time.Now().UTC(), Op: fsm.PolicyOpClear, By: user}
	if !req.Clear {
		if _, err := policy.Compile(req.Source); err != nil {
			s.writeError(w, http.StatusBadRequest, fmt.Errorf("%s: %w", action, err))
			return
		}
		c.Op, c.Source = fsm.PolicyOpLoad, req.Source
	}
	res, err := s.apply(fsm.PolicyLoadType, c)
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, statusOf(res.Err), fmt.Errorf("%s: %w", action, res.Err))
		return
	}
	s.log.Info("site policy "+c.Op, "by", user, "index", res.Index)
	out := s.policyAnswer()
	out.Index = res.Index
	s.writeJSON(w, http.StatusOK, out)
}

// handleShowPolicy answers the installed script, for an admin.
func (s *Server) handleShowPolicy(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.requireAdmin(w, r, "show the site policy"); !ok {
		return
	}
	s.writeJSON(w, http.StatusOK, s.policyAnswer())
}

// policyAnswer is the installed script as the API shows it.
func (s *Server) policyAnswer() client.Policy {
	var out client.Policy
	s.fsm.Read(func(v fsm.View) {
		if pol := v.Policy(); pol != nil {
			out = client.Policy{Source: pol.Source, By: pol.By, LoadIndex: pol.LoadIndex, LoadedAt: pol.LoadedAt}
		}
	})
	return out
}
