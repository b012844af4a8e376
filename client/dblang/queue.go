package dblang

import (
	"slices"
	"strconv"
	"strings"
)

// Queue parameters of add_q, in the order Format prints them.
const (
	qMaxSize   = "nq_maxsize"
	qMaxActive = "nq_maxactive"
	qMaxRun    = "nq_maxrun"
	qMaxMem    = "nq_maxmem"
	qPriority  = "priority"
	qKillGrace = "kill_grace"
	qPolicy    = "policy"
	qMaxUserA  = "nq_maxuser_active"
	qMaxUserQ  = "nq_maxuser_queued"
	qInteract  = "interactive"
	qPreempt   = "preempt"
)

var queueParams = []string{qMaxSize, qMaxActive, qMaxRun, qMaxMem, qPriority, qKillGrace, qPolicy, qMaxUserA, qMaxUserQ, qInteract, qPreempt}

// The placement policies of a queue (policy=), Octopus's policies side by
// side in one pool.
const (
	// PolicyBackfill is the default: priority and submit order, EASY
	// backfill around the first job that waits, least-loaded machine.
	PolicyBackfill = "backfill"
	// PolicyGang makes every job of the queue a gang: all its instances
	// at once or none.
	PolicyGang = "gang"
	// PolicyDedicated is space sharing: a machine running a job of the
	// queue runs jobs of that job's owner only.
	PolicyDedicated = "dedicated"
	// PolicySpread is load sharing: the least-loaded machine first, and
	// its jobs never hold machines for themselves while they wait.
	PolicySpread = "spread"
)

// Policies lists the placement policies, the default first.
var Policies = []string{PolicyBackfill, PolicyGang, PolicyDedicated, PolicySpread}

// How a queue preempts lower-priority queues (preempt=): the instances it
// takes slots from are stopped and queued again, or suspended until it
// ends.
const (
	// PreemptRequeue stops a restartable instance (its warning signal,
	// the kill grace, then SIGKILL) and queues it again, not counted
	// against its max_restarts.
	PreemptRequeue = "requeue"
	// PreemptSuspend stops an instance with SIGSTOP and continues it
	// with SIGCONT when the preempting job ends.
	PreemptSuspend = "suspend"
)

// PreemptModes lists the values of preempt=.
var PreemptModes = []string{PreemptRequeue, PreemptSuspend}

// knownQueueParams lists the parameters for error messages.
var knownQueueParams = strings.Join(append(append(queueParams[:len(queueParams):len(queueParams)], qPrime), QueueOwnerSettings[:len(QueueOwnerSettings)-1]...), ", ") +
	" and " + QueueOwnerSettings[len(QueueOwnerSettings)-1]

// queue checks an add_q declaration.
func (c *checker) queue(d decl) {
	owner := "add_q " + d.name.text
	if d.val.kind != vList {
		c.errs.add(d.val.pos, "%s wants a {nq_maxsize=N, ...} list, found %s", owner, d.val.describe())
		return
	}
	q := Queue{Name: d.name.text, Pos: d.pos}
	at := map[string]Pos{}
	for _, it := range d.val.items {
		name := it.name.text
		known := it.name.kind == vWord && (isQueueParam(name) || name == qPrime || isOwnerSetting(name, QueueOwnerSettings))
		switch {
		case !known:
			c.errs.add(it.name.pos, "unknown queue parameter %s in %s; the known ones are %s", it.name.describe(), owner, knownQueueParams)
			continue
		case !it.assign:
			c.errs.add(it.name.pos, "queue parameter %s in %s needs a value; write %s=N", name, owner, name)
			continue
		}
		if first, dup := at[name]; dup {
			c.errs.add(it.name.pos, "%s is given twice in %s (first at %d:%d); remove one", name, owner, first.Line, first.Col)
			continue
		}
		at[name] = it.name.pos
		if name == qPrime {
			q.Prime = c.prime(it, owner)
			continue
		}
		if isOwnerSetting(name, QueueOwnerSettings) {
			val, msg := ownerValue(it, owner)
			if msg != "" {
				c.errs.add(it.val.pos, "%s", msg)
				continue
			}
			if q.Owner == nil {
				q.Owner = map[string]string{}
			}
			q.Owner[name] = val
			continue
		}
		if name == qMaxRun {
			secs, msg := parseRunLimit(it.val, name+" in "+owner)
			if msg != "" {
				c.errs.add(it.val.pos, "%s", msg)
				continue
			}
			q.MaxRunSeconds = secs
			continue
		}
		if name == qPolicy {
			if it.val.kind != vWord || !validPolicy(it.val.text) {
				c.errs.add(it.val.pos, "bad policy %s in %s; write one of %s", it.val.describe(), owner, strings.Join(Policies, ", "))
				continue
			}
			q.Policy = it.val.text
			continue
		}
		if name == qInteract {
			switch strings.ToLower(it.val.text) {
			case ownerYes, "true":
				q.Interactive = true
			case ownerNo, "false":
			default:
				c.errs.add(it.val.pos, "%s in %s wants yes or no, found %s", name, owner, it.val.describe())
			}
			continue
		}
		if name == qPreempt {
			if it.val.kind != vWord || !slices.Contains(PreemptModes, it.val.text) {
				c.errs.add(it.val.pos, "bad preempt %s in %s; write preempt=requeue (stop and queue again) or preempt=suspend (SIGSTOP until the preempting job ends)", it.val.describe(), owner)
				continue
			}
			q.Preempt = it.val.text
			continue
		}
		if name == qKillGrace {
			secs, msg := parseGrace(it.val, name+" in "+owner)
			if msg != "" {
				c.errs.add(it.val.pos, "%s", msg)
				continue
			}
			q.KillGraceSeconds = secs
			continue
		}
		n, msg := parseInt(it.val, name+" in "+owner)
		if msg != "" {
			c.errs.add(it.val.pos, "%s", msg)
			continue
		}
		if n < 0 && name != qPriority {
			c.errs.add(it.val.pos, "%s=%d in %s is a negative limit; write 0 for no limit, or a positive number", name, n, owner)
			continue
		}
		switch name {
		case qMaxSize:
			q.MaxSize = n
		case qMaxActive:
			q.MaxActive = n
		case qMaxMem:
			q.MaxMemMB = n
		case qMaxUserA:
			q.MaxUserActive = n
		case qMaxUserQ:
			q.MaxUserQueued = n
		case qPriority:
			if int64(int(n)) != n {
				c.errs.add(it.val.pos, "number %d for priority in %s is out of range", n, owner)
				continue
			}
			q.Priority = int(n)
		}
	}
	if q.Interactive {
		for _, o := range c.db.Queues {
			if o.Interactive {
				c.errs.add(at[qInteract], "add_q %s is marked interactive=yes, and so is add_q %s (%d:%d); interactive jobs without --queue go to one queue, so mark only one",
					q.Name, o.Name, o.Pos.Line, o.Pos.Col)
			}
		}
	}
	c.db.Queues = append(c.db.Queues, q)
}

// validPolicy reports whether p is a placement policy.
func validPolicy(p string) bool {
	for _, x := range Policies {
		if x == p {
			return true
		}
	}
	return false
}

func isQueueParam(name string) bool {
	for _, p := range queueParams {
		if p == name {
			return true
		}
	}
	return false
}

// runUnits are the units nq_maxrun may carry, in seconds.
var runUnits = map[byte]int64{'s': 1, 'm': 60, 'h': 3600}

// parseRunLimit reads nq_maxrun: whole minutes (the paper's unit), or a
// whole number with a unit s, m or h. It returns seconds.
func parseRunLimit(v value, what string) (int64, string) {
	unit := int64(60)
	text := v.text
	if v.kind == vWord && len(text) > 1 {
		if u, ok := runUnits[text[len(text)-1]]; ok {
			unit, text = u, text[:len(text)-1]
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if v.kind != vWord || err != nil || n < 0 {
		return 0, "bad run limit " + v.describe() + " for " + what + "; write whole minutes such as 200, or a whole number with a unit: 90s, 30m, 2h"
	}
	if n > (1<<62)/unit {
		return 0, "run limit " + v.text + " for " + what + " is out of range"
	}
	return n * unit, ""
}

// maxGraceSeconds bounds kill_grace: an hour is already far longer than
// any checkpoint a site should wait for.
const maxGraceSeconds = 3600

// parseGrace reads kill_grace: whole seconds, or a whole number with a
// unit s, m or h, from 1 second to an hour. It returns seconds.
func parseGrace(v value, what string) (int64, string) {
	unit := int64(1)
	text := v.text
	if v.kind == vWord && len(text) > 1 {
		if u, ok := runUnits[text[len(text)-1]]; ok {
			unit, text = u, text[:len(text)-1]
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if v.kind != vWord || err != nil || n < 1 || n > maxGraceSeconds/unit {
		return 0, "bad kill grace " + v.describe() + " for " + what + "; write whole seconds from 1 to 3600, such as 30, or with a unit: 30s, 2m, 1h"
	}
	return n * unit, ""
}

// formatGrace prints seconds as kill_grace writes them: "30s".
func formatGrace(secs int64) string {
	return strconv.FormatInt(secs, 10) + "s"
}

// formatRunLimit prints seconds as nq_maxrun writes them: whole minutes
// without a unit, else seconds with one.
func formatRunLimit(secs int64) string {
	if secs%60 == 0 {
		return strconv.FormatInt(secs/60, 10)
	}
	return strconv.FormatInt(secs, 10) + "s"
}
