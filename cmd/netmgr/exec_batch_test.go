package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		line string
		want []string
		err  string
	}{
		{line: "-n 2  /bin/echo a\tb", want: []string{"-n", "2", "/bin/echo", "a", "b"}},
		{line: `'binaries={*=/bin/sh},args={-c,"echo hi"}'`, want: []string{`binaries={*=/bin/sh},args={-c,"echo hi"}`}},
		{line: `a"b c"d 'e f'g`, want: []string{"ab cd", "e fg"}},
		{line: `"x \"y\" \$z \n"`, want: []string{`x "y" $z \n`}},
		{line: `a\ b \'c`, want: []string{"a b", "'c"}},
		{line: `''`, want: []string{""}},
		{line: `'open`, err: "unterminated ' quote"},
		{line: `"open`, err: `unterminated " quote`},
		{line: `end\`, err: "a backslash ends the line"},
	}
	for _, tt := range tests {
		got, err := splitWords(tt.line)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("splitWords(%q) error = %v, want %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
}

func TestParseBatch(t *testing.T) {
	unsetExported(t)
	text := "# comment\n\n-n 3 --name a /bin/true x\n  # indented comment\n'binaries={*=/bin/sh},symb_name=b'\n--wait done /bin/true\n/bin/true 'unterminated\n"
	reqs, lines, errs := parseBatch("jobs.txt", text, t.TempDir())
	if len(reqs) != 2 || !reflect.DeepEqual(lines, []int{3, 5}) {
		t.Fatalf("got %d requests from lines %v, want 2 from lines 3 and 5", len(reqs), lines)
	}
	if js := reqs[0].Spec; js.Min != 3 || js.Name != "a" || !reflect.DeepEqual(js.Args, []string{"x"}) {
		t.Errorf("line 3 gave %+v", js)
	}
	if js := reqs[1].Spec; js.Name != "b" || js.Binaries["*"] != "/bin/sh" {
		t.Errorf("line 5 gave %+v", js)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{"jobs.txt:6: flag provided but not defined: -wait", "jobs.txt:7: unterminated ' quote"}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("errors %q, want %q", msgs, want)
	}
	if _, _, errs := parseBatch("empty", "# nothing\n\n", "/"); len(errs) != 1 || !strings.Contains(errs[0].Error(), "no job lines") {
		t.Errorf("an empty file gave %v, want one 'no job lines' error", errs)
	}
}
