package dblang

import (
	"regexp"
	"strconv"
	"sync"
)

// This file is the second pass: declarations to a Database, checking that
// every name is declared before it is used and declared once.

// checker builds a Database from declarations in file order.
type checker struct {
	errs *errorSink
	db   *Database
	// first is the first declaration of each name, by kind, over the whole
	// file: it tells "used before it is declared" from "not declared".
	first map[string]map[string]Pos
	// seen is what has been declared so far, by kind.
	seen map[string]map[string]Pos
	// member is the account of each user an account lists.
	member map[string]string
}

func check(decls []decl, errs *errorSink) *Database {
	c := &checker{
		errs:   errs,
		db:     &Database{},
		first:  map[string]map[string]Pos{},
		seen:   map[string]map[string]Pos{},
		member: map[string]string{},
	}
	for _, kind := range []string{declKey, declMType, declMachine, declQueue, declAdmin, declRoot, declAccount, declShare, declHalf} {
		c.first[kind] = map[string]Pos{}
		c.seen[kind] = map[string]Pos{}
	}
	for _, d := range decls {
		if _, dup := c.first[d.kind][d.name.text]; !dup {
			c.first[d.kind][d.name.text] = d.pos
		}
	}
	for _, d := range decls {
		if !c.declare(d) || d.broken {
			continue
		}
		switch d.kind {
		case declKey:
			c.db.Keys = append(c.db.Keys, Key{Name: d.name.text, Comment: d.comment, Pos: d.pos})
		case declMType:
			c.mtype(d)
		case declMachine:
			c.machine(d)
		case declQueue:
			c.queue(d)
		case declAdmin:
			c.db.Admins = append(c.db.Admins, d.name.text)
		case declRoot:
			c.db.AllowRootJobs = true
		case declAccount:
			c.account(d)
		case declShare:
			c.share(d)
		case declHalf:
			c.halfLife(d)
		}
	}
	return c.db
}

// declare records d's name, reporting a second declaration of it.
func (c *checker) declare(d decl) bool {
	if first, dup := c.seen[d.kind][d.name.text]; dup {
		switch d.kind {
		case declRoot, declHalf:
			c.errs.add(d.pos, "%s is given twice (first at line %d); remove one", d.kind, first.Line)
			return false
		case declShare:
			c.errs.add(d.name.pos, "share %s is given twice (first at line %d); remove one", d.name.text, first.Line)
			return false
		case declAdmin:
			c.errs.add(d.name.pos, "admin_id %s is given twice (first at line %d); remove one", d.name.text, first.Line)
			return false
		}
		c.errs.add(d.name.pos, "%s %s is declared twice (first at line %d); remove or rename one", d.kind, d.name.text, first.Line)
		return false
	}
	c.seen[d.kind][d.name.text] = d.pos
	return true
}

// body is what an mtype's or machine's list gives.
type body struct {
	mtype  string
	keys   []string
	attrs  map[string]float64
	mounts []string
	owner  map[string]string
}

func (c *checker) mtype(d decl) {
	if d.val.kind != vList {
		c.errs.add(d.val.pos, "mtype %s wants a {key, attr=NUMBER, mounts={...}} list, found %s", d.name.text, d.val.describe())
		return
	}
	b := c.body(d, false)
	c.db.MTypes = append(c.db.MTypes, MType{Name: d.name.text, Keys: b.keys, Attrs: b.attrs, Mounts: b.mounts, Owner: b.owner, Pos: d.pos})
}

func (c *checker) machine(d decl) {
	m := Machine{Name: d.name.text, Pos: d.pos}
	switch d.val.kind {
	case vWord:
		name := d.val.text
		if _, ok := c.seen[declMType][name]; ok {
			m.MType = name
			break
		}
		if first, later := c.first[declMType][name]; later {
			c.errs.add(d.val.pos, "mtype %s is used before it is declared at line %d; move its declaration above line %d", name, first.Line, d.pos.Line)
			return
		}
		if _, isKey := c.seen[declKey][name]; isKey {
			c.errs.add(d.val.pos, "%s is a key, not an mtype; write machine %s = {%s} to give the machine that key", name, m.Name, name)
			return
		}
		c.errs.add(d.val.pos, "unknown mtype %s; declare it with `mtype %s = {...}` above line %d", name, name, d.pos.Line)
		return
	case vList:
		b := c.body(d, true)
		m.MType, m.Keys, m.Attrs, m.Mounts, m.Owner = b.mtype, b.keys, b.attrs, b.mounts, b.owner
	default:
		c.errs.add(d.val.pos, "machine %s wants an mtype name or a {...} list, found %s", m.Name, d.val.describe())
		return
	}
	c.db.Machines = append(c.db.Machines, m)
}

// body checks the items of an mtype's list (machine false) or a machine's
// list (machine true).
func (c *checker) body(d decl, machine bool) body {
	owner := d.kind + " " + d.name.text
	var b body
	keyAt := map[string]Pos{}
	attrAt := map[string]Pos{}
	var mtypeAt Pos
	mountsSeen := false
	for _, it := range d.val.items {
		if it.assign {
			name := it.name.text
			if name == "mounts" {
				if mountsSeen {
					c.errs.add(it.name.pos, "mounts is given twice in %s; merge the two lists", owner)
					continue
				}
				mountsSeen = true
				b.mounts = c.mounts(it.val, owner)
				continue
			}
			if first, dup := attrAt[name]; dup && isOwnerSetting(name, MachineOwnerSettings) {
				c.errs.add(it.name.pos, "%s is given twice in %s (first at %d:%d); remove one", name, owner, first.Line, first.Col)
				continue
			}
			if isOwnerSetting(name, MachineOwnerSettings) {
				attrAt[name] = it.name.pos
				val, msg := ownerValue(it, owner)
				if msg != "" {
					c.errs.add(it.val.pos, "%s", msg)
					continue
				}
				if b.owner == nil {
					b.owner = map[string]string{}
				}
				b.owner[name] = val
				continue
			}
			if first, dup := attrAt[name]; dup {
				c.errs.add(it.name.pos, "attribute %s is given twice in %s (first at %d:%d); remove one", name, owner, first.Line, first.Col)
				continue
			}
			attrAt[name] = it.name.pos
			if f, ok := c.number(it, owner); ok {
				if b.attrs == nil {
					b.attrs = map[string]float64{}
				}
				b.attrs[name] = f
			}
			continue
		}
		if it.name.kind != vWord {
			what := "keys, attr=NUMBER and mounts={...}"
			if machine {
				what = "its mtype, " + what
			}
			c.errs.add(it.name.pos, "unexpected %s in the list of %s; the list holds %s", it.name.describe(), owner, what)
			continue
		}
		w := it.name.text
		_, isMType := c.first[declMType][w]
		_, isKey := c.seen[declKey][w]
		switch {
		case machine && isMType && b.mtype == "":
			if _, ok := c.seen[declMType][w]; !ok {
				c.errs.add(it.name.pos, "mtype %s is used before it is declared at line %d; move its declaration above line %d", w, c.first[declMType][w].Line, d.pos.Line)
			}
			b.mtype, mtypeAt = w, it.name.pos
		case isKey:
			if first, dup := keyAt[w]; dup {
				c.errs.add(it.name.pos, "key %s is listed twice in %s (first at %d:%d); remove one", w, owner, first.Line, first.Col)
				continue
			}
			keyAt[w] = it.name.pos
			b.keys = append(b.keys, w)
		case machine && isMType:
			c.errs.add(it.name.pos, "machine %s has two mtypes, %s (at %d:%d) and %s; a machine has one mtype", d.name.text, b.mtype, mtypeAt.Line, mtypeAt.Col, w)
		case isMType && !c.declaredLater(declKey, w):
			c.errs.add(it.name.pos, "%s is an mtype, not a key; an mtype's list holds keys, attr=NUMBER and mounts={...}", w)
		default:
			c.undeclared(it.name, d, machine)
		}
	}
	return b
}

// declaredLater reports whether the file declares name as kind anywhere.
func (c *checker) declaredLater(kind, name string) bool {
	_, ok := c.first[kind][name]
	return ok
}

// undeclared reports a bare word in a list that names no declared key.
func (c *checker) undeclared(w value, d decl, machine bool) {
	if first, later := c.first[declKey][w.text]; later {
		c.errs.add(w.pos, "key %s is used before it is declared at line %d; move `key %s` above line %d", w.text, first.Line, w.text, d.pos.Line)
		return
	}
	if machine {
		c.errs.add(w.pos, "%s is neither a declared key nor a declared mtype; declare it with `key %s` or `mtype %s = {...}` above line %d", w.text, w.text, w.text, d.pos.Line)
		return
	}
	c.errs.add(w.pos, "key %s is not declared; declare it with `key %s` above line %d", w.text, w.text, d.pos.Line)
}

// mounts checks a mounts={...} list: absolute paths, each once.
func (c *checker) mounts(v value, owner string) []string {
	if v.kind != vList {
		c.errs.add(v.pos, "mounts in %s wants a {/path, ...} list, found %s", owner, v.describe())
		return nil
	}
	return mountList(c.errs, v, owner)
}

// mountList checks the items of a mounts list; owner names its place.
func mountList(errs *errorSink, v value, owner string) []string {
	var out []string
	at := map[string]Pos{}
	for _, it := range v.items {
		m := it.name
		switch {
		case it.assign || m.kind == vList:
			errs.add(m.pos, "mounts in %s holds paths, found %s; write mounts={/path, ...}", owner, describeItem(it))
			continue
		case m.text == "" || m.text[0] != '/':
			errs.add(m.pos, "mount %s in %s is not an absolute path; write it starting with /", strconv.Quote(m.text), owner)
			continue
		}
		if first, dup := at[m.text]; dup {
			errs.add(m.pos, "mount %s is listed twice in %s (first at %d:%d); remove one", m.text, owner, first.Line, first.Col)
			continue
		}
		at[m.text] = m.pos
		out = append(out, m.text)
	}
	return out
}

// describeItem names an item in an error message.
func describeItem(it item) string {
	if it.assign {
		return it.name.text + "=" + it.val.describe()
	}
	return it.name.describe()
}

// number checks an attr=NUMBER item.
func (c *checker) number(it item, owner string) (float64, bool) {
	name := it.name.text
	if it.val.kind == vList {
		c.errs.add(it.val.pos, "attribute %s in %s wants a number, not a list (only mounts takes a list)", name, owner)
		return 0, false
	}
	f, msg := parseFloat(it.val, "attribute "+name+" in "+owner)
	if msg != "" {
		c.errs.add(it.val.pos, "%s", msg)
		return 0, false
	}
	return f, true
}

// floatRE and intRE are the number syntaxes of the database language,
// compiled at their first use to keep them out of every command's
// start-up (the CLI and the server are one binary).
var (
	floatRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	})
	intRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[+-]?[0-9]+$`) })
)

// parseFloat reads a number value; what names it in the message that says
// what is wrong with it.
func parseFloat(v value, what string) (f float64, msg string) {
	if v.kind != vWord || !floatRE().MatchString(v.text) {
		return 0, "bad number " + v.describe() + " for " + what + "; write a number such as 16 or 8.5"
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil {
		return 0, "number " + v.text + " for " + what + " is out of range"
	}
	return f, ""
}

// parseInt reads a whole-number value; what names it in the message that
// says what is wrong with it.
func parseInt(v value, what string) (n int64, msg string) {
	if v.kind == vWord && !intRE().MatchString(v.text) && floatRE().MatchString(v.text) {
		return 0, what + " wants a whole number, found " + v.text
	}
	if v.kind != vWord || !intRE().MatchString(v.text) {
		return 0, "bad number " + v.describe() + " for " + what + "; write a whole number such as 120"
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	if err != nil {
		return 0, "number " + v.text + " for " + what + " is out of range"
	}
	return n, ""
}
