package main

import (
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "sim-2.alice", "sim-2.alice"},
		{"empty", "", ""},
		{"space and punctuation", `big run "x" \d+ <b>`, `big run "x" \d+ <b>`},
		{"unicode letters and symbols", "Grüße 日本 π ✓ \u00a0nbsp", "Grüße 日本 π ✓ \u00a0nbsp"},
		{"emoji", "ok 🚀", "ok 🚀"},
		{"SGR colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"OSC title", "\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"carriage return", "ok\rFAKE", `ok\rFAKE`},
		{"newline", "a\nnetmgr: fake line", `a\nnetmgr: fake line`},
		{"CRLF", "a\r\n", `a\r\n`},
		{"tab", "a\tb", `a\tb`},
		{"backspace, bell, form feed, vertical tab", "\b\a\f\v", `\b\a\f\v`},
		{"NUL and other C0", "\x00\x01\x1f", `\x00\x01\x1f`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI as UTF-8", "\u009b31m", `\u009b31m`},
		{"C1 NEL", "a\u0085b", `a\u0085b`},
		{"raw CSI byte (invalid UTF-8)", "\x9b31m", `\x9b31m`},
		{"invalid UTF-8", "a\xff\xfeb", `a\xff\xfeb`},
		{"truncated rune", "日\xe6\x97", `日\xe6\x97`},
		{"bidi override", "evil\u202Etxt.exe", `evil\u202etxt.exe`},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"line separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"literal replacement character", "\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := printable(tt.in)
			if got != tt.want {
				t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
			assertTerminalSafe(t, got, false)
		})
	}
}

func TestPrintableLines(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "one problem", "one problem"},
		{"lines kept", "a:1: bad\na:2: worse", "a:1: bad\na:2: worse"},
		{"controls escaped", "job \"\x1b[31mx\": not found\r", `job "\x1b[31mx": not found\r`},
		{"tab escaped", "a\tb\n", "a\\tb\n"},
		{"C1 and bidi", "\u009b\u202e\n", "\\u009b\\u202e\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := printableLines(tt.in)
			if got != tt.want {
				t.Errorf("printableLines(%q) = %q, want %q", tt.in, got, tt.want)
			}
			assertTerminalSafe(t, got, true)
		})
	}
}

// TestPrintableAnyBytes checks, for every byte and every rune up to U+FFFF
// alone and between letters, that the result is terminal-safe and that
// text needing no escape comes back unchanged.
func TestPrintableAnyBytes(t *testing.T) {
	for b := 0; b < 256; b++ {
		s := "a" + string([]byte{byte(b)}) + "z"
		assertTerminalSafe(t, printable(s), false)
	}
	for r := rune(0); r <= 0xffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // surrogates do not encode
		}
		s := "a" + string(r) + "z"
		got := printable(s)
		assertTerminalSafe(t, got, false)
		if !needsEscape(r, utf8.RuneLen(r)) && got != s {
			t.Errorf("printable(%q) = %q, want it unchanged", s, got)
		}
	}
}

// assertTerminalSafe fails t when s holds a byte or rune a terminal acts
// on: a C0 control (but '\n' when newlines are allowed), DEL, a C1
// control, invalid UTF-8 or a bidi control.
func assertTerminalSafe(t *testing.T, s string, newlines bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%q is not valid UTF-8", s)
	}
	for i, r := range s {
		if r == '\n' && newlines {
			continue
		}
		if needsEscape(r, utf8.RuneLen(r)) {
			t.Errorf("%q holds %U at byte %d", s, r, i)
		}
	}
}
