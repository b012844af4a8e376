package dblang

import (
	"strconv"
	"strings"
	"time"
)

// Prime time: a queue's priority and limits may change on a weekly
// schedule. An add_q's prime={...} item gives the windows (ParseWindow's
// syntax, read in the time zone tz, UTC when none) and the values that
// apply inside them; outside, the queue's own apply:
//
//	add_q debug = {priority=5, nq_maxuser_active=2, \
//	    prime={window="Mon-Fri 08:00-18:00", tz="Europe/Paris", \
//	           priority=20, nq_maxuser_active=8}}
//
// window is one window or a {"...", ...} list of them; the values are
// priority and the limits nq_maxsize, nq_maxactive, nq_maxrun, nq_maxmem,
// nq_maxuser_active and nq_maxuser_queued, written as on the add_q. The
// language only records the declaration: when a window opens or closes is
// the server's (Schedule), and each change is decided once by a committed
// entry.

// Prime-time items.
const (
	qPrime       = "prime"
	primeWindow  = "window"
	primeTZ      = "tz"
	primeWindows = "window, tz"
)

// primeParams are the queue parameters prime time may override, in the
// order Format prints them.
var primeParams = []string{qMaxSize, qMaxActive, qMaxRun, qMaxMem, qPriority, qMaxUserA, qMaxUserQ}

// Prime is a queue's prime-time declaration (add_q prime={...}). A nil
// value is not overridden: the queue's own applies inside the window too.
type Prime struct {
	// Windows are the windows as written ("Mon-Fri 08:00-18:00"); the
	// prime values apply while any of them contains the time.
	Windows []string
	// TZ is the IANA time zone the windows are read in; "" is UTC.
	TZ string
	// The values inside the windows, nil where the queue's own apply.
	Priority      *int
	MaxSize       *int64
	MaxActive     *int64
	MaxRunSeconds *int64
	MaxMemMB      *int64
	MaxUserActive *int64
	MaxUserQueued *int64
	Pos           Pos
}

// field returns the override of queue parameter name.
func (p *Prime) field(name string) **int64 {
	switch name {
	case qMaxSize:
		return &p.MaxSize
	case qMaxActive:
		return &p.MaxActive
	case qMaxRun:
		return &p.MaxRunSeconds
	case qMaxMem:
		return &p.MaxMemMB
	case qMaxUserA:
		return &p.MaxUserActive
	case qMaxUserQ:
		return &p.MaxUserQueued
	}
	return nil
}

// prime checks an add_q's prime={...} item; nil when it is wrong (the
// errors are reported).
func (c *checker) prime(it item, owner string) *Prime {
	where := qPrime + " in " + owner
	if it.val.kind != vList {
		c.errs.add(it.val.pos, `%s wants a {window="Mon-Fri 08:00-18:00", priority=N, ...} list, found %s`, where, it.val.describe())
		return nil
	}
	p := &Prime{Pos: it.name.pos}
	at := map[string]Pos{}
	ok := true
	for _, x := range it.val.items {
		name := x.name.text
		known := x.name.kind == vWord && (name == primeWindow || name == primeTZ || isPrimeParam(name))
		switch {
		case !known:
			c.errs.add(x.name.pos, "unknown prime-time parameter %s in %s; the known ones are %s and %s", x.name.describe(), owner,
				primeWindows, strings.Join(primeParams, ", "))
			ok = false
			continue
		case !x.assign:
			c.errs.add(x.name.pos, "prime-time parameter %s in %s needs a value; write %s=...", name, owner, name)
			ok = false
			continue
		}
		if first, dup := at[name]; dup {
			c.errs.add(x.name.pos, "%s is given twice in %s (first at %d:%d); remove one", name, where, first.Line, first.Col)
			ok = false
			continue
		}
		at[name] = x.name.pos
		switch name {
		case primeWindow:
			ok = c.primeWindows(x.val, where, p) && ok
		case primeTZ:
			ok = c.primeTZ(x.val, where, p) && ok
		default:
			n, msg := primeNumber(x.val, name, where)
			if msg != "" {
				c.errs.add(x.val.pos, "%s", msg)
				ok = false
				continue
			}
			if name == qPriority {
				v := int(n)
				p.Priority = &v
				continue
			}
			*p.field(name) = &n
		}
	}
	if _, given := at[primeWindow]; !given && ok {
		c.errs.add(it.name.pos, `%s needs a window; write window="Mon-Fri 08:00-18:00" (or a {"...", ...} list)`, where)
		return nil
	}
	if ok && !p.overrides() {
		c.errs.add(it.name.pos, "%s changes nothing; give the priority or limits that apply inside the window (priority=N, nq_maxactive=N, ...)", where)
		return nil
	}
	if !ok {
		return nil
	}
	return p
}

// overrides reports whether p gives any value.
func (p *Prime) overrides() bool {
	if p.Priority != nil {
		return true
	}
	for _, name := range primeParams {
		if name != qPriority && *p.field(name) != nil {
			return true
		}
	}
	return false
}

func isPrimeParam(name string) bool {
	for _, p := range primeParams {
		if p == name {
			return true
		}
	}
	return false
}

// primeWindows checks window=: one window in double quotes, or a list of
// them, each one ParseWindow reads.
func (c *checker) primeWindows(v value, where string, p *Prime) bool {
	var vals []value
	switch v.kind {
	case vString:
		vals = []value{v}
	case vList:
		for _, w := range v.items {
			if w.assign || w.name.kind != vString {
				c.errs.add(w.name.pos, `window in %s holds windows in double quotes, such as "Mon-Fri 08:00-18:00", found %s`, where, describeItem(w))
				return false
			}
			vals = append(vals, w.name)
		}
		if len(vals) == 0 {
			c.errs.add(v.pos, `window in %s lists no window; write window="Mon-Fri 08:00-18:00"`, where)
			return false
		}
	default:
		c.errs.add(v.pos, `window in %s wants a window in double quotes, such as "Mon-Fri 08:00-18:00", found %s`, where, v.describe())
		return false
	}
	for _, w := range vals {
		if _, err := ParseWindow(w.text); err != nil {
			c.errs.add(w.pos, "bad window %q in %s: want DAYS, HH:MM-HH:MM or both, such as \"Mon-Fri 08:00-18:00\"", w.text, where)
			return false
		}
		p.Windows = append(p.Windows, strings.TrimSpace(w.text))
	}
	return true
}

// primeTZ checks tz=: an IANA time zone name, which the tz database
// (the system's, or the one embedded in the binary) must know.
func (c *checker) primeTZ(v value, where string, p *Prime) bool {
	if (v.kind != vWord && v.kind != vString) || v.text == "" {
		c.errs.add(v.pos, `tz in %s wants a time zone name, such as tz="Europe/Paris", found %s`, where, v.describe())
		return false
	}
	if _, err := time.LoadLocation(v.text); err != nil || strings.EqualFold(v.text, "local") {
		c.errs.add(v.pos, `unknown time zone %q for tz in %s; write an IANA name in double quotes, such as tz="Europe/Paris", or UTC`, v.text, where)
		return false
	}
	p.TZ = v.text
	return true
}

// primeNumber reads one prime-time value as the add_q reads it.
func primeNumber(v value, name, where string) (int64, string) {
	what := name + " in " + where
	if name == qMaxRun {
		return parseRunLimit(v, what)
	}
	n, msg := parseInt(v, what)
	switch {
	case msg != "":
		return 0, msg
	case n < 0 && name != qPriority:
		return 0, name + "=" + strconv.FormatInt(n, 10) + " in " + where + " is a negative limit; write 0 for no limit, or a positive number"
	case name == qPriority && int64(int(n)) != n:
		return 0, "number " + strconv.FormatInt(n, 10) + " for priority in " + where + " is out of range"
	}
	return n, ""
}

// formatPrime prints a prime={...} item.
func formatPrime(p *Prime) string {
	var items []string
	if len(p.Windows) == 1 {
		items = append(items, primeWindow+"="+quoteString(p.Windows[0]))
	} else {
		ws := make([]string, len(p.Windows))
		for i, w := range p.Windows {
			ws[i] = quoteString(w)
		}
		items = append(items, primeWindow+"={"+strings.Join(ws, ", ")+"}")
	}
	if p.TZ != "" {
		items = append(items, primeTZ+"="+formatWord(p.TZ))
	}
	for _, name := range primeParams {
		switch {
		case name == qPriority:
			if p.Priority != nil {
				items = append(items, name+"="+strconv.Itoa(*p.Priority))
			}
		case *p.field(name) == nil:
		case name == qMaxRun:
			items = append(items, name+"="+formatRunLimit(**p.field(name)))
		default:
			items = append(items, name+"="+strconv.FormatInt(**p.field(name), 10))
		}
	}
	return qPrime + "={" + strings.Join(items, ", ") + "}"
}

// primeEqual compares two prime-time declarations; Pos is ignored.
func primeEqual(a, b *Prime) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !sliceEqual(a.Windows, b.Windows) || a.TZ != b.TZ || !ptrEqual(a.Priority, b.Priority) {
		return false
	}
	for _, name := range primeParams {
		if name != qPriority && !ptrEqual(*a.field(name), *b.field(name)) {
			return false
		}
	}
	return true
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
