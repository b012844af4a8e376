package dblang

import (
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, that a failure is a non-empty
// ErrorList with a nil Database, and that whatever it accepts survives
// Format then Parse unchanged. The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(isisFormatted))
	f.Add([]byte("key a /* c */\nmtype m = {a, x=1.5, mounts={/p, \"/q r\"}}\nmachine h = {m, a, y=-2}\nadd_q Q = {priority=-1, nq_maxmem=2}\nadmin_id \"a b\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		db, err := Parse("fuzz", src)
		if err != nil {
			checkErrorList(t, err)
			if db != nil {
				t.Fatalf("Parse failed but returned a Database")
			}
			return
		}
		out := Format(db)
		back, err := Parse("formatted", out)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but Parse(Format()=%q): %v", src, out, err)
		}
		if !back.Equal(db) {
			t.Fatalf("round trip of %q through %q: got %+v, want %+v", src, out, back, db)
		}
		if again := Format(back); string(again) != string(out) {
			t.Fatalf("Format is not stable: got %q, want %q", again, out)
		}
	})
}

// FuzzParseInit is FuzzParse for init files, through FormatInit. The seed
// corpus is in testdata/fuzz/FuzzParseInit.
func FuzzParseInit(f *testing.F) {
	f.Add([]byte("mtype=sparc2, mem=64, rating=8.0, nprocs=4\nkeys={mathlab,fpu}\nmounts={/data,/scratch}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		in, err := ParseInit("fuzz", src)
		if err != nil {
			checkErrorList(t, err)
			if in != nil {
				t.Fatalf("ParseInit failed but returned an Init")
			}
			return
		}
		out := FormatInit(in)
		back, err := ParseInit("formatted", out)
		if err != nil {
			t.Fatalf("ParseInit(%q) ok, but ParseInit(FormatInit()=%q): %v", src, out, err)
		}
		if !back.Equal(in) {
			t.Fatalf("round trip of %q through %q: got %+v, want %+v", src, out, back, in)
		}
	})
}

// checkErrorList checks err is a non-empty ErrorList, sorted, with real
// positions.
func checkErrorList(t *testing.T, err error) {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("got error %#v, want a non-empty ErrorList", err)
	}
	for i, e := range list {
		if e.Pos.Line < 1 || e.Pos.Col < 1 || e.Msg == "" {
			t.Fatalf("error %d: got %v %q, want a position and a message", i, e.Pos, e.Msg)
		}
		if i > 0 {
			p := list[i-1].Pos
			if p.Line > e.Pos.Line || p.Line == e.Pos.Line && p.Col > e.Pos.Col {
				t.Fatalf("errors out of order: %v before %v", p, e.Pos)
			}
		}
	}
}
