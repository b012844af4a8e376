package dblang

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a token.
type tokKind int

const (
	tEOF     tokKind = iota
	tNewline         // a newline that ends a declaration (not one after \)
	tWord            // a name or number: letters, digits, _ - . +
	tPath            // a word that starts with '/'
	tString          // a double-quoted string; text is its unquoted value
	tLBrace
	tRBrace
	tComma
	tEquals
	tError // the lexer already reported this; the parser stays quiet
)

// token is one token and where it starts.
type token struct {
	kind tokKind
	text string
	pos  Pos
	off  int // byte offset in the source
}

// describe names t in an error message.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tNewline:
		return "end of line"
	case tWord:
		return fmt.Sprintf("%q", t.text)
	case tPath:
		return fmt.Sprintf("path %s", t.text)
	case tString:
		return fmt.Sprintf("string %q", t.text)
	case tLBrace:
		return "'{'"
	case tRBrace:
		return "'}'"
	case tComma:
		return "','"
	case tEquals:
		return "'='"
	}
	return "a bad token"
}

// comment is the text inside one /* */ comment.
type comment struct {
	off  int
	text string
}

// lexer splits a source into tokens, reporting lexical errors as it goes.
type lexer struct {
	src      []byte
	off      int
	pos      Pos
	toks     []token
	comments []comment
	errs     *errorSink
}

// lex returns the tokens of src, always ending with tEOF, and its comments.
func lex(file string, src []byte, errs *errorSink) ([]token, []comment) {
	lx := &lexer{src: src, pos: Pos{File: file, Line: 1, Col: 1}, errs: errs}
	lx.run()
	return lx.toks, lx.comments
}

// isWordByte reports whether c may appear in a name or number.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '+'
}

// isPathByte reports whether c may appear in an unquoted path (after its
// leading '/'): anything but blanks, control characters and , { } = " \.
// "/*" also ends a path, since it opens a comment.
func isPathByte(c byte) bool {
	switch {
	case c <= ' ' || c == 0x7f: // blanks and control characters
		return false
	case c == ',' || c == '{' || c == '}' || c == '=' || c == '"' || c == '\\':
		return false
	}
	return true
}

// isWord reports whether s lexes as one word token.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// isPath reports whether s lexes as one unquoted path token.
func isPath(s string) bool {
	if s == "" || s[0] != '/' || strings.Contains(s, "/*") {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isPathByte(s[i]) {
			return false
		}
	}
	return true
}

// advance moves past n bytes, keeping the line and column.
func (lx *lexer) advance(n int) {
	end := lx.off + n
	for lx.off < end {
		r, size := utf8.DecodeRune(lx.src[lx.off:])
		if size == 0 {
			size = 1
		}
		lx.off += size
		if r == '\n' {
			lx.pos.Line++
			lx.pos.Col = 1
		} else {
			lx.pos.Col++
		}
	}
}

func (lx *lexer) emit(kind tokKind, text string, pos Pos, off int) {
	lx.toks = append(lx.toks, token{kind: kind, text: text, pos: pos, off: off})
}

func (lx *lexer) run() {
	for lx.off < len(lx.src) {
		c := lx.src[lx.off]
		pos, off := lx.pos, lx.off
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			lx.advance(1)
		case c == '\n':
			lx.advance(1)
			lx.emit(tNewline, "\n", pos, off)
		case c == '\\':
			lx.continuation(pos, off)
		case c == '/' && lx.off+1 < len(lx.src) && lx.src[lx.off+1] == '*':
			if !lx.comment(pos, off) {
				lx.emit(tError, "", pos, off)
				lx.emit(tEOF, "", lx.pos, lx.off)
				return
			}
		case c == '/':
			n := 1
			for lx.off+n < len(lx.src) && isPathByte(lx.src[lx.off+n]) &&
				(lx.src[lx.off+n] != '/' || lx.off+n+1 >= len(lx.src) || lx.src[lx.off+n+1] != '*') {
				n++
			}
			lx.advance(n)
			lx.emit(tPath, string(lx.src[off:lx.off]), pos, off)
		case c == '"':
			lx.quoted(pos, off)
		case c == '{':
			lx.advance(1)
			lx.emit(tLBrace, "{", pos, off)
		case c == '}':
			lx.advance(1)
			lx.emit(tRBrace, "}", pos, off)
		case c == ',':
			lx.advance(1)
			lx.emit(tComma, ",", pos, off)
		case c == '=':
			lx.advance(1)
			lx.emit(tEquals, "=", pos, off)
		case isWordByte(c):
			n := 1
			for lx.off+n < len(lx.src) && isWordByte(lx.src[lx.off+n]) {
				n++
			}
			lx.advance(n)
			lx.emit(tWord, string(lx.src[off:lx.off]), pos, off)
		default:
			r, size := utf8.DecodeRune(lx.src[lx.off:])
			if r == utf8.RuneError && size <= 1 {
				lx.errs.add(pos, "unexpected byte %#02x (the file is not UTF-8 text here)", c)
			} else {
				lx.errs.add(pos, "unexpected character %q; names use letters, digits, _ - . + and other text goes in double quotes", r)
			}
			lx.advance(size)
			lx.emit(tError, "", pos, off)
		}
	}
	lx.emit(tEOF, "", lx.pos, lx.off)
}

// continuation handles a '\': followed by blanks and a newline (or the end
// of the file) it joins the next line to this one; anywhere else it is an
// error.
func (lx *lexer) continuation(pos Pos, off int) {
	n := 1
	for lx.off+n < len(lx.src) && (lx.src[lx.off+n] == ' ' || lx.src[lx.off+n] == '\t' || lx.src[lx.off+n] == '\r') {
		n++
	}
	if lx.off+n >= len(lx.src) || lx.src[lx.off+n] == '\n' {
		lx.advance(n)
		if lx.off < len(lx.src) {
			lx.advance(1) // the newline it hides
		}
		return
	}
	lx.errs.add(pos, `a \ continues a declaration only at the end of a line; remove it or the text after it`)
	lx.advance(1)
	lx.emit(tError, "", pos, off)
}

// comment reads a /* */ comment; it reports false when the comment runs to
// the end of the file.
func (lx *lexer) comment(pos Pos, off int) bool {
	end := bytes.Index(lx.src[off+2:], []byte("*/"))
	if end < 0 {
		lx.errs.add(pos, "unterminated comment: this /* has no closing */; close it")
		lx.advance(len(lx.src) - off)
		return false
	}
	lx.comments = append(lx.comments, comment{off: off, text: string(lx.src[off+2 : off+2+end])})
	lx.advance(end + 4)
	return true
}

// quoted reads a double-quoted string; \" and \\ are its only escapes and
// it must end on the line it starts.
func (lx *lexer) quoted(pos Pos, off int) {
	var b strings.Builder
	bad := false
	i := off + 1
	at, atOff := pos, off // a cursor for the positions of bad escapes
	for {
		if i >= len(lx.src) || lx.src[i] == '\n' {
			lx.errs.add(pos, `unterminated string: close it with " before the end of the line`)
			lx.advance(i - off)
			lx.emit(tError, "", pos, off)
			return
		}
		c := lx.src[i]
		if c == '"' {
			i++
			break
		}
		if c == '\\' {
			if i+1 < len(lx.src) && (lx.src[i+1] == '"' || lx.src[i+1] == '\\') {
				b.WriteByte(lx.src[i+1])
				i += 2
				continue
			}
			if i+1 < len(lx.src) && lx.src[i+1] != '\n' {
				// The string is on one line, so the backslash's column
				// is the cursor's plus the runes in between.
				at.Col += utf8.RuneCount(lx.src[atOff:i])
				atOff = i
				r, _ := utf8.DecodeRune(lx.src[i+1:])
				lx.errs.add(at, `unknown escape \%c in a string; only \" and \\ are escapes`, r)
				bad = true
				i += 2
				continue
			}
			i++
			continue // a \ before the newline: reported as unterminated next
		}
		b.WriteByte(c)
		i++
	}
	lx.advance(i - off)
	if bad {
		lx.emit(tError, "", pos, off)
		return
	}
	lx.emit(tString, b.String(), pos, off)
}
