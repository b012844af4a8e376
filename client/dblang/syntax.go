package dblang

import (
	"sort"
	"strconv"
	"strings"
)

// This file is the first pass: tokens to declarations and values, checking
// only the shape. What the names mean is checked in check.go.

// valKind is the kind of a value.
type valKind int

const (
	vWord valKind = iota
	vPath
	vString
	vList
)

// value is a word, path, string or {...} list, and where it starts.
type value struct {
	kind  valKind
	text  string // word, path or unquoted string
	items []item // a list's items
	pos   Pos
}

// describe names v in an error message.
func (v value) describe() string {
	switch v.kind {
	case vPath:
		return "path " + v.text
	case vString:
		return "string " + strconv.Quote(v.text)
	case vList:
		return "a {...} list"
	}
	return quoteString(v.text)
}

// item is one list item: a bare value, or NAME=VALUE.
type item struct {
	name   value // the bare value, or the word before '='
	assign bool
	val    value // after '='; valid when assign
}

// decl is one declaration as written.
type decl struct {
	kind    string // key, mtype, machine, add_q, admin_id or allow_root_jobs
	pos     Pos    // of the declaration word
	name    value  // the declared name (admin_id: the login; allow_root_jobs: none)
	comment string // key comments
	val     value  // after '='; not for key and admin_id
	broken  bool   // malformed after its name, already reported
}

// Declaration words.
const (
	declKey     = "key"
	declMType   = "mtype"
	declMachine = "machine"
	declQueue   = "add_q"
	declAdmin   = "admin_id"
	declRoot    = "allow_root_jobs"
	declAccount = "account"
	declShare   = "share"
	declHalf    = "fairshare_halflife"
)

// declWords lists the declaration words for error messages.
const declWords = "key, mtype, machine, add_q, admin_id, allow_root_jobs, account, share or fairshare_halflife"

// parser holds the tokens of one file.
type parser struct {
	toks     []token
	i        int
	comments []comment
	errs     *errorSink
	depth    int // lists open at the current token
	// open is the number of lists an unterminated-list error left open;
	// skipOpenList skips the lines that continue them.
	open int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// endOfDecl reports whether t ends a declaration.
func endOfDecl(t token) bool { return t.kind == tNewline || t.kind == tEOF }

// fail reports an error at t unless the lexer already reported t. It
// returns false so callers can `return p.fail(...)`.
func (p *parser) fail(t token, format string, args ...any) bool {
	if t.kind != tError {
		p.errs.add(t.pos, format, args...)
	}
	return false
}

// skipDecl moves to the newline (or end of file) that ends the current
// declaration, without consuming it.
func (p *parser) skipDecl() {
	for !endOfDecl(p.peek()) {
		p.i++
	}
}

// skipNewlines consumes blank lines.
func (p *parser) skipNewlines() {
	for p.peek().kind == tNewline {
		p.i++
	}
}

// decls reads every declaration of a database file, reporting and skipping
// the ones that are malformed.
func (p *parser) decls() []decl {
	var out []decl
	for {
		p.skipNewlines()
		t := p.peek()
		if t.kind == tEOF {
			return out
		}
		d, ok := p.decl()
		if ok {
			if end := p.peek(); !endOfDecl(end) {
				ok = p.fail(end, "unexpected %s after the %s declaration; put each declaration on its own line", end.describe(), d.kind)
			}
		}
		if !ok && isDeclWord(d.kind) && d.name.text != "" {
			// Its name is still declared, so its uses and a second
			// declaration are checked as usual, without a cascade of
			// "not declared" errors.
			d.broken = true
			ok = true
		}
		if ok {
			out = append(out, d)
		}
		p.skipDecl()
		p.skipOpenList(true)
	}
}

// isDeclWord reports whether w starts a declaration.
func isDeclWord(w string) bool {
	switch w {
	case declKey, declMType, declMachine, declQueue, declAdmin, declRoot, declAccount, declShare, declHalf:
		return true
	}
	return false
}

// skipOpenList skips the lines that continue a list an unterminated-list
// error left open, so they do not each report an error of their own: up to
// the end of the line that closes it, or, when declWords is set, up to a
// line that starts with a declaration word.
func (p *parser) skipOpenList(declWords bool) {
	depth := p.open
	p.open, p.depth = 0, 0
	for depth > 0 && p.peek().kind != tEOF {
		p.next() // the newline
		if t := p.peek(); declWords && t.kind == tWord && isDeclWord(t.text) {
			return
		}
		for !endOfDecl(p.peek()) {
			switch p.next().kind {
			case tLBrace:
				depth++
			case tRBrace:
				depth--
			}
		}
	}
}

// decl reads one declaration, up to but not including its end of line.
func (p *parser) decl() (decl, bool) {
	kw := p.next()
	d := decl{kind: kw.text, pos: kw.pos}
	if kw.kind != tWord {
		return d, p.fail(kw, "expected a declaration (%s), found %s", declWords, kw.describe())
	}
	switch kw.text {
	case declHalf:
		// fairshare_halflife = DURATION: no name of its own.
		if eq := p.peek(); eq.kind != tEquals {
			return d, p.fail(eq, "expected '=' after %s, found %s%s", kw.text, eq.describe(), newlineHint(eq))
		}
		p.next()
		v, ok := p.value()
		d.val = v
		return d, ok
	case declKey, declMType, declMachine, declQueue, declAccount, declShare:
		t := p.peek()
		if t.kind != tWord {
			return d, p.fail(t, "expected a name after %s, found %s%s", kw.text, t.describe(), nameHint(t))
		}
		p.next()
		d.name = value{kind: vWord, text: t.text, pos: t.pos}
	case declAdmin:
		t := p.peek()
		if t.kind != tWord && t.kind != tString {
			return d, p.fail(t, "expected a login after admin_id, found %s%s", t.describe(), newlineHint(t))
		}
		p.next()
		if t.text == "" {
			return d, p.fail(t, "admin_id needs a login; write admin_id LOGIN")
		}
		d.name = value{kind: vWord, text: t.text, pos: t.pos}
	case declRoot:
		if t := p.peek(); !endOfDecl(t) {
			return d, p.fail(t, "allow_root_jobs takes no arguments, found %s; write allow_root_jobs alone on its line to allow root jobs, or leave it out to refuse them", t.describe())
		}
		return d, true
	default:
		return d, p.fail(kw, "unknown declaration %q; a declaration starts with %s", kw.text, declWords)
	}
	switch kw.text {
	case declKey:
		d.comment = p.commentsBefore(kw.off, p.peek())
		return d, true
	case declAdmin:
		return d, true
	}
	eq := p.peek()
	if eq.kind != tEquals {
		return d, p.fail(eq, "expected '=' after %s %s, found %s%s", kw.text, d.name.text, eq.describe(), newlineHint(eq))
	}
	p.next()
	v, ok := p.value()
	d.val = v
	return d, ok
}

// newlineHint explains, after a message that found the end of a line,
// how a declaration goes on to the next.
func newlineHint(t token) string {
	if t.kind == tNewline {
		return `; a newline ends a declaration unless a \ ends the line`
	}
	return ""
}

// nameHint says what a name is, or why the line ended.
func nameHint(t token) string {
	if t.kind == tNewline {
		return newlineHint(t)
	}
	return " (names use letters, digits, _ - . +)"
}

// commentsBefore joins the comments from offset from up to the token end,
// which ends a key declaration.
func (p *parser) commentsBefore(from int, end token) string {
	if !endOfDecl(end) {
		return "" // an error follows; the comment does not matter
	}
	var parts []string
	i := sort.Search(len(p.comments), func(i int) bool { return p.comments[i].off > from })
	for ; i < len(p.comments) && p.comments[i].off < end.off; i++ {
		if s := strings.TrimSpace(p.comments[i].text); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// value reads a word, path, string or {...} list.
func (p *parser) value() (value, bool) {
	t := p.peek()
	switch t.kind {
	case tWord, tPath, tString:
		p.next()
		k := vWord
		if t.kind == tPath {
			k = vPath
		} else if t.kind == tString {
			k = vString
		}
		return value{kind: k, text: t.text, pos: t.pos}, true
	case tLBrace:
		return p.list()
	}
	return value{}, p.fail(t, "expected a value (a name, number, path, string or {...} list), found %s%s", t.describe(), newlineHint(t))
}

// maxDepth bounds how deep lists nest, so a hostile file cannot make the
// parser recurse without end.
const maxDepth = 8

// list reads {item, item, ...}; the list must close before the line ends.
func (p *parser) list() (value, bool) {
	open := p.next()
	v := value{kind: vList, pos: open.pos}
	if p.depth == maxDepth {
		return v, p.fail(open, "lists nest more than %d deep here; no declaration needs more than 2", maxDepth)
	}
	p.depth++
	if p.peek().kind == tRBrace {
		p.next()
		p.depth--
		return v, true
	}
	for {
		if endOfDecl(p.peek()) {
			return v, p.unterminated(open)
		}
		it, ok := p.item()
		if !ok {
			return v, false
		}
		v.items = append(v.items, it)
		t := p.peek()
		switch t.kind {
		case tComma:
			p.next()
			if n := p.peek(); n.kind == tRBrace {
				return v, p.fail(n, "expected an item after ',', found '}'; remove the trailing comma")
			}
		case tRBrace:
			p.next()
			p.depth--
			return v, true
		case tNewline, tEOF:
			return v, p.unterminated(open)
		default:
			return v, p.fail(t, "expected ',' or '}' after a list item, found %s", t.describe())
		}
	}
}

func (p *parser) unterminated(open token) bool {
	p.open = p.depth
	return p.fail(open, `unterminated list: this { has no closing } on its line; close it, or end the line with \ to continue the list on the next`)
}

// item reads a bare value or NAME=VALUE.
func (p *parser) item() (item, bool) {
	name, ok := p.value()
	if !ok {
		return item{}, false
	}
	it := item{name: name}
	if t := p.peek(); t.kind == tEquals {
		if name.kind != vWord {
			return it, p.fail(t, "expected a name before '=', found %s", name.describe())
		}
		p.next()
		if endOfDecl(p.peek()) || p.peek().kind == tComma || p.peek().kind == tRBrace {
			n := p.peek()
			return it, p.fail(n, "expected a value after %s=, found %s", name.text, n.describe())
		}
		it.assign = true
		if it.val, ok = p.value(); !ok {
			return it, false
		}
	}
	return it, true
}

// quoteString quotes s the way the language does: \" and \\ escaped.
func quoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
