package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/history"
)

// historyRetry is how often a server that lacks part of its history asks
// its peers again.
const historyRetry = 2 * time.Second

// fillHistory fills the gaps a snapshot restore left in this server's
// history from its peers (GET /v1/history/range), after every restore
// and every historyRetry while gaps remain, until the server stops. The
// records are the same on every server, so any peer that holds a range
// will do.
func (s *Server) fillHistory() {
	t := time.NewTicker(historyRetry)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.hist.restored:
		case <-t.C:
		}
		gaps, err := s.hist.db.Gaps()
		if err != nil {
			s.log.Error("history gaps unreadable", "err", err)
			continue
		}
		for _, g := range gaps {
			if err := s.fillGap(g); err != nil {
				if !warned {
					s.log.Warn("history gap not filled yet; asking the other servers again", "after", g.After, "through", g.Through, "err", err)
					warned = true
				}
				continue
			}
			s.log.Info("history gap filled from a peer", "after", g.After, "through", g.Through)
			warned = false
		}
	}
}

// fillGap fetches the records of g from the first peer that holds them
// all, page by page.
func (s *Server) fillGap(g history.Gap) error {
	peers := s.gossip.servers()
	names := make([]string, 0, len(peers))
	for name := range peers {
		if name != s.cfg.Name && peers[name].HTTP != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Errorf("fill history %d..%d: no other server in the gossip pool", g.After, g.Through)
	}
	var last error
	for _, name := range names {
		after := g.After
		for after < g.Through {
			rng, err := s.fetchRange(peers[name].HTTP, after, g.Through)
			if err != nil {
				last = fmt.Errorf("from %s: %w", name, err)
				break
			}
			if rng.UpTo <= after || rng.UpTo > g.Through {
				last = fmt.Errorf("from %s: answer up to %d for %d..%d", name, rng.UpTo, after, g.Through)
				break
			}
			if err := s.hist.db.Fill(after, rng.UpTo, rangeEntries(rng)); err != nil {
				return err
			}
			after = rng.UpTo
		}
		if after >= g.Through {
			return nil
		}
		g.After = after // a later peer goes on where this one stopped
	}
	return fmt.Errorf("fill history %d..%d: %w", g.After, g.Through, last)
}

// fetchRange asks the server at addr for the records of the entries
// after after through through.
func (s *Server) fetchRange(addr string, after, through uint64) (*client.HistoryRange, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s%s/v1/history/range?after=%d&through=%d", s.scheme(), addr, after, through)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e client.ErrorResponse
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		return nil, fmt.Errorf("%s: %s", resp.Status, e.Error)
	}
	var out client.HistoryRange
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode history range: %w", err)
	}
	return &out, nil
}

// rangeEntries translates a peer's answer for the history file.
func rangeEntries(r *client.HistoryRange) []history.Entry {
	out := make([]history.Entry, len(r.Entries))
	for i, e := range r.Entries {
		he := history.Entry{Index: e.Index}
		for j, ev := range e.Events {
			he.Events = append(he.Events, history.Event{Index: e.Index, Seq: j, At: ev.At, Kind: ev.Kind, Job: ev.Job,
				Instance: ev.Instance, Attempt: ev.Attempt, Machine: ev.Machine, Detail: ev.Detail})
		}
		for _, a := range e.Attempts {
			he.Attempts = append(he.Attempts, history.Attempt{Index: e.Index, Job: a.Job, Name: a.Name, Owner: a.Owner,
				Queue: a.Queue, Instance: a.Instance, Attempt: a.Attempt, Machine: a.Machine, State: a.State,
				ExitCode: a.ExitCode, Signal: a.Signal, Error: a.Error, Reason: a.Reason, UserMS: a.UserMS,
				SysMS: a.SysMS, MaxRSSKB: a.MaxRSSKB, SubmittedAt: a.SubmittedAt, PlacedAt: a.PlacedAt,
				StartedAt: a.StartedAt, EndedAt: a.EndedAt, ReplacedBy: a.ReplacedBy})
		}
		out[i] = he
	}
	return out
}
