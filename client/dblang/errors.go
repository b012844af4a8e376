package dblang

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a source file, at Pos.
type Error struct {
	Pos Pos
	Msg string
}

// Error formats e as "FILE:LINE:COL: MESSAGE".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is every problem Parse or ParseInit found, sorted by position.
// It is the error those functions return; use errors.As to get it.
type ErrorList []*Error

// maxErrorLines bounds the lines ErrorList.Error prints, so a binary file
// loaded by mistake gives a readable answer; the list itself keeps all.
const maxErrorLines = 30

// Error prints one error per line, "FILE:LINE:COL: MESSAGE", at most 30 of
// them followed by a line saying how many more there are.
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == maxErrorLines {
			fmt.Fprintf(&b, "\n(and %d more errors)", len(l)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// errorSink collects errors while parsing.
type errorSink struct {
	list ErrorList
}

func (s *errorSink) add(pos Pos, format string, args ...any) {
	s.list = append(s.list, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// err returns the sorted list, or nil when it is empty.
func (s *errorSink) err() error {
	if len(s.list) == 0 {
		return nil
	}
	sort.SliceStable(s.list, func(i, j int) bool {
		a, b := s.list[i].Pos, s.list[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return s.list
}

// ErrBadOwnerSetting means an owner-policy setting's value cannot work:
// ParseWindow's errors wrap it, and package stub/owner's ErrBadSetting is
// this same error, so one errors.Is answers for both.
var ErrBadOwnerSetting = errors.New("bad owner policy setting")
