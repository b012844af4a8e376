package dblang

import "strings"

// Queue parameters of add_q, in the order Format prints them.
const (
	qMaxSize   = "nq_maxsize"
	qMaxActive = "nq_maxactive"
	qMaxRun    = "nq_maxrun"
	qMaxMem    = "nq_maxmem"
	qPriority  = "priority"
)

var queueParams = []string{qMaxSize, qMaxActive, qMaxRun, qMaxMem, qPriority}

// knownQueueParams lists the parameters for error messages.
var knownQueueParams = strings.Join(queueParams[:len(queueParams)-1], ", ") + " and " + qPriority

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
		known := it.name.kind == vWord && isQueueParam(name)
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
		case qMaxRun:
			q.MaxRunMinutes = n
		case qMaxMem:
			q.MaxMemMB = n
		case qPriority:
			if int64(int(n)) != n {
				c.errs.add(it.val.pos, "number %d for priority in %s is out of range", n, owner)
				continue
			}
			q.Priority = int(n)
		}
	}
	c.db.Queues = append(c.db.Queues, q)
}

func isQueueParam(name string) bool {
	for _, p := range queueParams {
		if p == name {
			return true
		}
	}
	return false
}
