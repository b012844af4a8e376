package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/netmgr/netmgr/client"
)

// Error is a syntax or rule error in a spec string. Error() reads
// "spec:LINE:COL: MESSAGE", where MESSAGE names the option when there is
// one, e.g. `spec:1:23: option min: "x" is not a positive integer`.
type Error struct {
	// Line and Col are 1-based; Col counts characters (runes), not bytes.
	Line, Col int
	// Option is the option the error is about; empty for errors before any
	// option name was read.
	Option string
	// Msg is the message after the position.
	Msg string
}

// Error formats the error as "spec:LINE:COL: MESSAGE".
func (e *Error) Error() string { return fmt.Sprintf("spec:%d:%d: %s", e.Line, e.Col, e.Msg) }

// Parse reads a spec string into a JobSpec. It never panics; on failure it
// returns an *Error. Empty lists give nil slices, so a parsed spec compares
// equal to the parse of its Format.
func Parse(s string) (client.JobSpec, error) {
	var spec client.JobSpec
	if !utf8.ValidString(s) {
		bad := 0
		for bad < len(s) {
			r, size := utf8.DecodeRuneInString(s[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		p := &parser{src: s}
		return spec, p.errAt(bad, "", "the spec is not valid UTF-8")
	}
	p := &parser{src: s, seen: map[string]int{}}
	if err := p.parse(&spec); err != nil {
		return client.JobSpec{}, err
	}
	return spec, nil
}

type parser struct {
	src  string
	pos  int
	seen map[string]int // option name -> offset of its first use
}

// scalar is a bare word or quoted string and where it started.
type scalar struct {
	val string
	pos int
}

func (p *parser) errAt(off int, opt, format string, args ...any) *Error {
	line, col := 1, 1
	for _, r := range p.src[:off] {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	msg := fmt.Sprintf(format, args...)
	if opt != "" {
		msg = "option " + opt + ": " + msg
	}
	return &Error{Line: line, Col: col, Option: opt, Msg: msg}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

// found describes the text at the current position for error messages.
func (p *parser) found() string {
	if p.eof() {
		return "end of spec"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return fmt.Sprintf("%q", r)
}

func isNameByte(c byte, first bool) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || !first && c >= '0' && c <= '9'
}

func (p *parser) parse(spec *client.JobSpec) error {
	p.skipSpace()
	if p.eof() {
		return p.errAt(p.pos, "", "empty spec (option %s is required)", optBinaries)
	}
	for {
		if err := p.option(spec); err != nil {
			return err
		}
		p.skipSpace()
		if p.eof() {
			break
		}
		if p.src[p.pos] != ',' {
			return p.errAt(p.pos, "", "expected ',' or end of spec, found %s", p.found())
		}
		p.pos++
		p.skipSpace()
	}
	if _, ok := p.seen[optBinaries]; !ok {
		return p.errAt(len(p.src), optBinaries, "required but missing")
	}
	if off, ok := p.seen[optMaxRestarts]; ok {
		if msg := checkMaxRestarts(spec.Restart); msg != "" {
			return p.errAt(off, optMaxRestarts, "%s", msg)
		}
	}
	for _, opt := range []string{optCatchup, optOverlap} {
		if off, ok := p.seen[opt]; ok && spec.Cron == "" {
			return p.errAt(off, opt, "%s", needsCron)
		}
	}
	if off, ok := p.seen[optMailType]; ok && spec.Mail == "" {
		return p.errAt(off, optMailType, "needs mail or mail=ADDRESS")
	}
	if off, ok := p.seen[optSignal]; ok && spec.TimeLimitS > 0 && spec.WarnLeadS >= spec.TimeLimitS {
		return p.errAt(off, optSignal, "the warning %ds before the time limit comes before the job starts (time=%s)",
			spec.WarnLeadS, FormatTimeLimit(spec.TimeLimitS))
	}
	if off, ok := p.seen[optMaxPerMachine]; ok && spec.Unique && spec.MaxPerMachine > 1 {
		return p.errAt(off, optMaxPerMachine, "%s", uniqueConflict)
	}
	return p.checkpointPair(spec)
}

// option reads one item of the spec: option=value, a bare option (unique,
// mail) or a comparison ATTR OP NUMBER, and stores it in spec.
func (p *parser) option(spec *client.JobSpec) error {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], p.pos == start) {
		p.pos++
	}
	if p.pos == start {
		return p.errAt(start, "", "expected an option name, found %s", p.found())
	}
	name := p.src[start:p.pos]
	p.skipSpace()
	if op := p.op(); op != "" {
		return p.addRequirement(spec, name, start, op)
	}
	def, known := options[name]
	if !known {
		return p.unknown(name, start)
	}
	if first, dup := p.seen[name]; dup {
		return p.errAt(start, name, "given twice (first at %s)", p.lineCol(first))
	}
	p.seen[name] = start
	if def.bare != nil && (p.eof() || p.src[p.pos] == ',') {
		def.bare(spec)
		return nil
	}
	if p.eof() || p.src[p.pos] != '=' {
		return p.errAt(p.pos, name, "expected '=' after the option name, found %s", p.found())
	}
	p.pos++
	p.skipSpace()
	return def.value(p, spec, name)
}

// lineCol prints the position of offset off as LINE:COL.
func (p *parser) lineCol(off int) string {
	e := p.errAt(off, "", "")
	return fmt.Sprintf("%d:%d", e.Line, e.Col)
}

// addRequirement reads the number of a comparison whose attribute started
// at start and whose operator has been read.
func (p *parser) addRequirement(spec *client.JobSpec, attr string, start int, op string) error {
	r, err := p.comparison(attr, start, op)
	if err != nil {
		return err
	}
	label := attr + op
	if first, dup := p.seen[label]; dup {
		return p.errAt(start, label, "given twice (first at %s)", p.lineCol(first))
	}
	p.seen[label] = start
	spec.Requirements = append(spec.Requirements, r)
	return nil
}

// unknown builds the error for an option name the language does not have,
// with a hint when one is likely: a misspelt option, an attribute compared
// with '=' (mem=10), or a key written alone (fpu).
func (p *parser) unknown(name string, start int) error {
	if !p.eof() && p.src[p.pos] == '=' {
		at := p.pos
		p.pos++
		p.skipSpace()
		if v, err := p.scalar(name, false); err == nil {
			if _, msg := parseNumber(v.val); msg == "" {
				return p.errAt(start, "", "unknown option %s (to compare a machine attribute write %s==%s or %s>=%s)",
					name, name, v.val, name, v.val)
			}
		}
		p.pos = at
	}
	if near := nearestOption(name); near != "" {
		return p.errAt(start, "", "unknown option %s (did you mean %s?)", name, near)
	}
	if p.eof() || p.src[p.pos] == ',' {
		return p.errAt(start, "", "unknown option %s (to require the key %s write keys={%s})", name, name, name)
	}
	return p.errAt(start, "", "unknown option %s", name)
}

// single reads one value that may not be a list.
func (p *parser) single(opt string) (scalar, error) {
	if !p.eof() && p.src[p.pos] == '{' {
		return scalar{}, p.errAt(p.pos, opt, "want a single value, not a {...} list")
	}
	return p.scalar(opt, false)
}

// checkedList reads the {...} list of the list option opt and checks its
// items as listOptions says.
func (p *parser) checkedList(opt string) ([]string, error) {
	lo := listOptions[opt]
	items, err := p.list(opt)
	if err != nil {
		return nil, err
	}
	var vals []string
	seen := map[string]bool{}
	for _, it := range items {
		if msg := lo.check(it.val); msg != "" {
			return nil, p.errAt(it.pos, opt, "%s", msg)
		}
		if lo.item != "" {
			if seen[it.val] {
				return nil, p.errAt(it.pos, opt, "%s %s given twice", lo.item, it.val)
			}
			seen[it.val] = true
		}
		vals = append(vals, it.val)
	}
	return vals, nil
}

// open consumes the '{' that starts a list.
func (p *parser) open(opt, want string) error {
	if p.eof() || p.src[p.pos] != '{' {
		return p.errAt(p.pos, opt, "want a %s list, found %s", want, p.found())
	}
	p.pos++
	p.skipSpace()
	return nil
}

// next consumes the ',' or '}' after a list item; it reports whether the
// list ended.
func (p *parser) next(opt string) (bool, error) {
	p.skipSpace()
	if p.eof() {
		return false, p.errAt(p.pos, opt, "unterminated list (missing '}')")
	}
	switch p.src[p.pos] {
	case '}':
		p.pos++
		return true, nil
	case ',':
		p.pos++
		p.skipSpace()
		return false, nil
	}
	return false, p.errAt(p.pos, opt, "expected ',' or '}' in list, found %s", p.found())
}

// list reads a {...} list of values.
func (p *parser) list(opt string) ([]scalar, error) {
	if err := p.open(opt, "{value,...}"); err != nil {
		return nil, err
	}
	if !p.eof() && p.src[p.pos] == '}' {
		p.pos++
		return nil, nil
	}
	var items []scalar
	for {
		if !p.eof() && p.src[p.pos] == '{' {
			return nil, p.errAt(p.pos, opt, "lists do not nest")
		}
		v, err := p.scalar(opt, false)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		end, err := p.next(opt)
		if err != nil {
			return nil, err
		}
		if end {
			return items, nil
		}
	}
}

// binaries reads {key=path,...}.
func (p *parser) binaries(spec *client.JobSpec) error {
	if err := p.open(optBinaries, "{key=path,...}"); err != nil {
		return err
	}
	if !p.eof() && p.src[p.pos] == '}' {
		return p.errAt(p.pos, optBinaries, "needs at least one key=path")
	}
	bins := map[string]string{}
	for {
		key, err := p.scalar(optBinaries, true)
		if err != nil {
			return err
		}
		if msg := checkKey(key.val); msg != "" {
			return p.errAt(key.pos, optBinaries, "%s", msg)
		}
		if _, dup := bins[key.val]; dup {
			return p.errAt(key.pos, optBinaries, "key %s given twice", key.val)
		}
		p.skipSpace()
		if p.eof() || p.src[p.pos] != '=' {
			return p.errAt(p.pos, optBinaries, "expected '=' after key %s, found %s", key.val, p.found())
		}
		p.pos++
		p.skipSpace()
		if !p.eof() && p.src[p.pos] == '{' {
			return p.errAt(p.pos, optBinaries, "lists do not nest")
		}
		path, err := p.scalar(optBinaries, false)
		if err != nil {
			return err
		}
		if msg := checkPath(path.val); msg != "" {
			return p.errAt(path.pos, optBinaries, "key %s: %s", key.val, msg)
		}
		bins[key.val] = path.val
		end, err := p.next(optBinaries)
		if err != nil {
			return err
		}
		if end {
			spec.Binaries = bins
			return nil
		}
	}
}

// scalar reads a quoted string or a bare word at the current position. A
// bare word ends at ',', '}' or the end of the spec, and also at '=' when
// key is true; surrounding whitespace is not part of it.
func (p *parser) scalar(opt string, key bool) (scalar, error) {
	start := p.pos
	if !p.eof() && p.src[p.pos] == '"' {
		return p.quoted(opt, key)
	}
	end := start // end of the word without trailing space
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == ',' || c == '}' || key && c == '=' {
			break
		}
		if c == '"' || c == '{' {
			return scalar{}, p.errAt(p.pos, opt, "unexpected %q inside a bare word (quote the whole value)", c)
		}
		p.pos++
		if !isSpace(c) {
			end = p.pos
		}
	}
	if end == start {
		return scalar{}, p.errAt(start, opt, "missing value (write \"\" for an empty string)")
	}
	return scalar{val: p.src[start:end], pos: start}, nil
}

// quoted reads a double-quoted string; \" and \\ are the only escapes.
func (p *parser) quoted(opt string, key bool) (scalar, error) {
	start := p.pos
	p.pos++ // opening quote
	var b strings.Builder
	for {
		if p.eof() {
			return scalar{}, p.errAt(start, opt, "unterminated quoted string")
		}
		c := p.src[p.pos]
		switch c {
		case '"':
			p.pos++
			p.skipSpace()
			if !p.eof() {
				switch n := p.src[p.pos]; {
				case n == ',' || n == '}' || key && n == '=':
				default:
					return scalar{}, p.errAt(p.pos, opt, "unexpected %s after a quoted string", p.found())
				}
			}
			return scalar{val: b.String(), pos: start}, nil
		case '\\':
			if p.pos+1 >= len(p.src) {
				return scalar{}, p.errAt(start, opt, "unterminated quoted string")
			}
			n := p.src[p.pos+1]
			if n != '"' && n != '\\' {
				return scalar{}, p.errAt(p.pos, opt, `unknown escape in quoted string (only \" and \\ are escapes)`)
			}
			b.WriteByte(n)
			p.pos += 2
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}
