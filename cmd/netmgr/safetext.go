package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file makes text that users chose safe to print on a terminal. Job
// names, arguments, binary paths, directories, reasons, machine names and
// the servers' error messages (which quote them) are data a user of the
// pool controls: printed raw, an ESC or CSI could move the cursor, recolour
// or retitle the terminal, hide what follows or fake a line of output, and
// a CR or newline could overwrite or forge one. Every place the commands
// print such a value for a person goes through printable (one field, one
// line) or printableLines (a message that may span lines). JSON output
// does not: encoding/json escapes control characters itself, and a
// program reading it wants the value as it is.

// printable renders s for a terminal as one line: control characters (C0
// such as ESC, CR, LF and tab; DEL; C1 such as CSI U+009B), the bytes of
// invalid UTF-8, the Unicode line and paragraph separators and the bidi
// controls that reorder what follows (U+202E and the others) are written
// as Go escapes (\x1b, \r, \n, \t, \u009b, \xff, \u202e); everything else,
// printable Unicode included, passes through unchanged. A backslash is
// not doubled, so the result is for reading, not for parsing back; it
// never holds a byte that a terminal acts on. Tabs are escaped too, since
// they would shift the columns of a table.
func printable(s string) string { return escapeText(s, false) }

// printableLines is printable for text that may span lines, such as an
// error message listing one problem a line: '\n' stays a line break and
// everything else is escaped as printable does.
func printableLines(s string) string { return escapeText(s, true) }

// escapeText is printable and printableLines: keepNewline keeps '\n'.
func escapeText(s string, keepNewline bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) && !(keepNewline && r == '\n') {
			break
		}
		i += size
	}
	if i == len(s) {
		return s // the usual case: nothing to escape, no copy
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case keepNewline && r == '\n', !needsEscape(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\a':
			b.WriteString(`\a`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\v':
			b.WriteString(`\v`)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether the rune r, decoded from size bytes, is one
// printable escapes: a C0 control, DEL, a C1 control, a byte of invalid
// UTF-8, U+2028 or U+2029, or a bidi control.
func needsEscape(r rune, size int) bool {
	switch {
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r < 0xa0:
		return true
	case r == utf8.RuneError && size == 1:
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // ALM, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}

// printableList is printable applied to each of ss.
func printableList(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = printable(s)
	}
	return out
}

// printableError is an error whose message is escaped as one line
// (printable), for an error that quotes what a job chose, such as the
// names in its output archive; errors.Is and errors.As still see the
// error it wraps.
type printableError struct{ err error }

func (e *printableError) Error() string { return printable(e.err.Error()) }
func (e *printableError) Unwrap() error { return e.err }
