package fsm

import (
	"fmt"
	"strings"
	"time"
)

// Policy ops (PolicyLoad.Op).
const (
	PolicyOpLoad  = "load"
	PolicyOpClear = "clear"
	PolicyOpError = "error"
)

// PolicyLoad installs a site policy script (Op load: Source, checked by
// the leader before it proposes), removes it (Op clear), or records that
// the installed one failed at a call (Op error: Error says where and how,
// Repeats how many failures alike were not recorded since the last).
// By is the verified admin (load, clear). Apply stores the source and
// never compiles it: each server compiles a load once, outside Apply
// (package server/policy). A load or clear changes what the leader's
// planner orders by, so it is proposed only once every server applies
// command level 45; an error is informational and proposed with
// IgnoreUnknownFlag. Since command level 45.
type PolicyLoad struct {
	At      time.Time `json:"at"`
	Op      string    `json:"op"`
	By      string    `json:"by,omitempty"`
	Source  string    `json:"source,omitempty"`
	Error   string    `json:"error,omitempty"`
	Repeats int       `json:"repeats,omitempty"`
}

// Policy is the installed site policy script; since snapshot version 15
// it is in the snapshot's header. It is replaced whole, never changed in
// place, so a copy of the pointer is a copy.
type Policy struct {
	Source    string    `json:"source"`
	By        string    `json:"by"`
	LoadIndex uint64    `json:"load_index"`
	LoadedAt  time.Time `json:"loaded_at"`
}

// Event kinds of the site policy.
const (
	EventPolicyLoaded  = "policy-loaded"
	EventPolicyCleared = "policy-cleared"
	EventPolicyError   = "policy-error"
)

func (d *db) applyPolicyLoad(index uint64, c *PolicyLoad) *Result {
	switch c.Op {
	case PolicyOpLoad:
		if strings.TrimSpace(c.Source) == "" {
			return &Result{Index: index, Err: fmt.Errorf("policy load: %w: an empty script (use clear)", ErrInvalidPolicy)}
		}
		d.policy = &Policy{Source: c.Source, By: c.By, LoadIndex: index, LoadedAt: c.At}
		d.event(index, c.At, EventPolicyLoaded, 0, -1, 0, "", fmt.Sprintf("site policy loaded by %s (%d lines)", c.By, strings.Count(strings.TrimRight(c.Source, "\n"), "\n")+1))
	case PolicyOpClear:
		if d.policy == nil {
			return &Result{Index: index, Stale: true}
		}
		d.policy = nil
		d.event(index, c.At, EventPolicyCleared, 0, -1, 0, "", "site policy cleared by "+c.By)
	case PolicyOpError:
		detail := c.Error
		if c.Repeats > 0 {
			detail += fmt.Sprintf(" (and %d more like it)", c.Repeats)
		}
		d.event(index, c.At, EventPolicyError, 0, -1, 0, "", detail)
	default:
		return &Result{Index: index, Err: fmt.Errorf("policy %q: %w: not load, clear or error", c.Op, ErrInvalidPolicy)}
	}
	return &Result{Index: index}
}

// Policy is the installed site policy script, nil when none. The caller
// must not change it.
func (v View) Policy() *Policy { return v.d.policy }
