package dblang

import (
	"bytes"
	"strings"
)

// Init file items with a meaning of their own; any other name=NUMBER is an
// attribute.
const (
	initMType  = "mtype"
	initKeys   = "keys"
	initMounts = "mounts"
)

// ParseInit reads a stub's init file: name=value items separated by commas
// or newlines, in the database language's lexical syntax, such as
//
//	mtype=sparc2, mem=64, rating=8.0, nprocs=4
//	keys={mathlab,fpu}
//	mounts={/data,/scratch}
//
// mtype takes a name, keys a {name,...} list, mounts a {/path,...} list and
// every other name a number. Keys need not be declared anywhere. On any
// problem it returns a nil Init and an ErrorList naming file:line:col for
// each. ParseInit never panics and is safe to call concurrently.
func ParseInit(filename string, src []byte) (*Init, error) {
	errs := &errorSink{}
	toks, comments := lex(filename, src, errs)
	p := &parser{toks: toks, comments: comments, errs: errs}
	in := &Init{}
	at := map[string]Pos{}
	for {
		p.skipNewlines()
		if p.peek().kind == tEOF {
			break
		}
		if t := p.peek(); t.kind != tWord {
			p.fail(t, "expected name=value, found %s", t.describe())
			p.skipDecl()
			continue
		}
		it, ok := p.item()
		if ok && !it.assign {
			ok = p.fail(p.peek(), "expected '=' after %s, found %s; write %s=value", it.name.text, p.peek().describe(), it.name.text)
		}
		if ok {
			switch t := p.peek(); t.kind {
			case tComma:
				p.next()
				if n := p.peek(); n.kind == tComma {
					ok = p.fail(n, "expected name=value after ',', found ','")
				}
			case tNewline, tEOF:
			default:
				ok = p.fail(t, "unexpected %s after %s=...; separate items with ',' or a new line", t.describe(), it.name.text)
			}
		}
		if !ok {
			p.skipDecl()
			p.skipOpenList(false)
			continue
		}
		name := it.name.text
		if first, dup := at[name]; dup {
			errs.add(it.name.pos, "%s is given twice (first at %d:%d); remove one", name, first.Line, first.Col)
			continue
		}
		at[name] = it.name.pos
		initItem(errs, in, it)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return in, nil
}

// initItem checks one name=value of an init file and stores it in in.
func initItem(errs *errorSink, in *Init, it item) {
	name, v := it.name.text, it.val
	switch name {
	case initMType:
		if v.kind != vWord {
			errs.add(v.pos, "mtype wants an mtype name, found %s", v.describe())
			return
		}
		in.MType = v.text
	case initKeys:
		if v.kind != vList {
			errs.add(v.pos, "keys wants a {key, ...} list, found %s", v.describe())
			return
		}
		seen := map[string]Pos{}
		for _, k := range v.items {
			if k.assign || k.name.kind != vWord {
				errs.add(k.name.pos, "keys holds names, found %s; write keys={fpu, mathlab}", describeItem(k))
				continue
			}
			if first, dup := seen[k.name.text]; dup {
				errs.add(k.name.pos, "key %s is listed twice in keys (first at %d:%d); remove one", k.name.text, first.Line, first.Col)
				continue
			}
			seen[k.name.text] = k.name.pos
			in.Keys = append(in.Keys, k.name.text)
		}
	case initMounts:
		if v.kind != vList {
			errs.add(v.pos, "mounts wants a {/path, ...} list, found %s", v.describe())
			return
		}
		in.Mounts = mountList(errs, v, "the init file")
	case OwnerSleepOnLogin, OwnerSleepOnInput, OwnerSleepOnLoad, OwnerLoadMonitor, OwnerAvailable, OwnerVacateAfter, OwnerKeepSuspended:
		val, msg := ownerValue(it, "the init file")
		if msg != "" {
			errs.add(v.pos, "%s", msg)
			return
		}
		if in.Owner == nil {
			in.Owner = map[string]string{}
		}
		in.Owner[name] = val
	default:
		if isResourceList(name, v) {
			in.Attrs = resourceList(errs, it, "the init file", in.Attrs)
			return
		}
		if v.kind == vList {
			errs.add(v.pos, "attribute %s wants a number, not a list (only keys, mounts, gpus and gres take lists)", name)
			return
		}
		f, msg := parseFloat(v, "attribute "+name)
		if msg != "" {
			errs.add(v.pos, "%s", msg)
			return
		}
		if in.Attrs == nil {
			in.Attrs = map[string]float64{}
		}
		in.Attrs[name] = f
	}
}

// FormatInit prints in as an init file, one item per line: mtype, keys in
// order, attributes sorted by name, then mounts sorted. For any Init
// ParseInit returned, ParseInit(FormatInit(in)) is Equal to in. FormatInit
// of nil is empty.
func FormatInit(in *Init) []byte {
	if in == nil {
		return nil
	}
	var b bytes.Buffer
	if in.MType != "" {
		b.WriteString(initMType + "=" + in.MType + "\n")
	}
	if len(in.Keys) > 0 {
		b.WriteString(initKeys + "={" + strings.Join(in.Keys, ", ") + "}\n")
	}
	for _, a := range formatAttrs(in.Attrs) {
		b.WriteString(a + "\n")
	}
	if len(in.Mounts) > 0 {
		b.WriteString(initMounts + "=" + formatMounts(in.Mounts) + "\n")
	}
	for _, o := range formatOwner(in.Owner, MachineOwnerSettings) {
		b.WriteString(o + "\n")
	}
	return b.Bytes()
}
