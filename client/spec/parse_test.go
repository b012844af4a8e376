package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want client.JobSpec
	}{
		{
			name: "paper example",
			in:   `binaries={sparc=/usr/u/isis/bin/test},min=3,symb_name=job1,env={"DISPLAY=flute"},args={4}`,
			want: client.JobSpec{
				Name:     "job1",
				Binaries: map[string]string{"sparc": "/usr/u/isis/bin/test"},
				Args:     []string{"4"},
				Env:      []string{"DISPLAY=flute"},
				Min:      3,
			},
		},
		{
			name: "shell with quoted argument",
			in:   `binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={"A=b"},args={-c,"echo hi"}`,
			want: client.JobSpec{
				Name:     "job1",
				Binaries: map[string]string{"x86_64": "/bin/sh"},
				Args:     []string{"-c", "echo hi"},
				Env:      []string{"A=b"},
				Min:      3,
			},
		},
		{
			name: "binaries only",
			in:   `binaries={x86_64=/bin/true}`,
			want: client.JobSpec{Binaries: map[string]string{"x86_64": "/bin/true"}},
		},
		{
			name: "several binaries and any key",
			in:   `binaries={sparc=/u/sparc/test, mips=/u/mips/test, "*"=/u/any/test}`,
			want: client.JobSpec{Binaries: map[string]string{
				"sparc": "/u/sparc/test", "mips": "/u/mips/test", "*": "/u/any/test",
			}},
		},
		{
			name: "bare star key",
			in:   `binaries={*=/bin/sh}`,
			want: client.JobSpec{Binaries: map[string]string{"*": "/bin/sh"}},
		},
		{
			name: "whitespace around tokens",
			in:   "  binaries = { x86_64 = /bin/sh } ,\n min = 2 , args = { a b , \"c\" }  ",
			want: client.JobSpec{
				Binaries: map[string]string{"x86_64": "/bin/sh"},
				Args:     []string{"a b", "c"},
				Min:      2,
			},
		},
		{
			name: "escapes in quoted strings",
			in:   `binaries={x=/bin/echo},args={"say \"hi\"","back\\slash","",","}`,
			want: client.JobSpec{
				Binaries: map[string]string{"x": "/bin/echo"},
				Args:     []string{`say "hi"`, `back\slash`, "", ","},
			},
		},
		{
			name: "empty lists are nil",
			in:   `args={},binaries={x=/bin/true},env={ }`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/bin/true"}},
		},
		{
			name: "equals sign in a bare path and env value",
			in:   `binaries={x=/opt/a=b},env={A=b=c}`,
			want: client.JobSpec{
				Binaries: map[string]string{"x": "/opt/a=b"},
				Env:      []string{"A=b=c"},
			},
		},
		{
			name: "quoted min and name",
			in:   `binaries={x=/bin/true},min="4",symb_name="my-job.v2"`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/bin/true"}, Min: 4, Name: "my-job.v2"},
		},
		{
			name: "unicode argument",
			in:   `binaries={x=/bin/echo},args={héllo,"wörld ✓"}`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/bin/echo"}, Args: []string{"héllo", "wörld ✓"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", ``, `spec:1:1: empty spec (option binaries is required)`},
		{"only spaces", `   `, `spec:1:4: empty spec (option binaries is required)`},
		{"binaries missing", `min=3`, `spec:1:6: option binaries: required but missing`},
		{"min not a number", `binaries={x=/bin/sh},min=x`, `spec:1:26: option min: "x" is not a positive integer`},
		{"min zero", `binaries={x=/bin/sh},min=0`, `spec:1:26: option min: "0" is not a positive integer`},
		{"min negative", `binaries={x=/bin/sh},min=-2`, `spec:1:26: option min: "-2" is not a positive integer`},
		{"min plus sign", `binaries={x=/bin/sh},min=+2`, `spec:1:26: option min: "+2" is not a positive integer`},
		{"min overflow", `binaries={x=/bin/sh},min=99999999999999999999`, `spec:1:26: option min: "99999999999999999999" is not a positive integer`},
		{"min list", `binaries={x=/bin/sh},min={3}`, `spec:1:26: option min: want a single value, not a {...} list`},
		{"min missing value", `binaries={x=/bin/sh},min=`, `spec:1:26: option min: missing value (write "" for an empty string)`},
		{"min missing value before comma", `min= ,binaries={x=/bin/sh}`, `spec:1:6: option min: missing value (write "" for an empty string)`},
		{"unknown option", `binaries={x=/bin/sh},colour=red`, `spec:1:22: unknown option colour`},
		{"later option", `binaries={x=/bin/sh},mem=10`, `spec:1:22: option mem: not supported yet`},
		{"later option restart", `restart=always,binaries={x=/bin/sh}`, `spec:1:1: option restart: not supported yet`},
		{"duplicate option", `binaries={x=/bin/sh},min=1,min=2`, `spec:1:28: option min: given twice (first at 1:22)`},
		{"missing equals", `binaries={x=/bin/sh},min 3`, `spec:1:26: option min: expected '=' after the option name, found '3'`},
		{"option name missing", `,binaries={x=/bin/sh}`, `spec:1:1: expected an option name, found ','`},
		{"trailing comma", `binaries={x=/bin/sh},`, `spec:1:22: expected an option name, found end of spec`},
		{"garbage after value", `binaries={x=/bin/sh} min=3`, `spec:1:22: expected ',' or end of spec, found 'm'`},
		{"close brace at top level", `binaries={x=/bin/sh},min=3}`, `spec:1:27: expected ',' or end of spec, found '}'`},
		{"binaries not a list", `binaries=/bin/sh`, `spec:1:10: option binaries: want a {key=path,...} list, found '/'`},
		{"binaries empty", `binaries={}`, `spec:1:11: option binaries: needs at least one key=path`},
		{"binaries missing equals", `binaries={/bin/sh}`, `spec:1:11: option binaries: "/bin/sh" is not a machine key (letters, digits and _-., or "*")`},
		{"binaries key without path", `binaries={x86_64}`, `spec:1:17: option binaries: expected '=' after key x86_64, found '}'`},
		{"binaries empty path", `binaries={x86_64=""}`, `spec:1:18: option binaries: key x86_64: empty binary path`},
		{"binaries missing path", `binaries={x86_64=}`, `spec:1:18: option binaries: missing value (write "" for an empty string)`},
		{"binaries duplicate key", `binaries={x=/a,x=/b}`, `spec:1:16: option binaries: key x given twice`},
		{"binaries nested list", `binaries={x={/a}}`, `spec:1:13: option binaries: lists do not nest`},
		{"binaries unterminated", `binaries={x=/a`, `spec:1:15: option binaries: unterminated list (missing '}')`},
		{"binaries bad key", `binaries={"a b"=/bin/sh}`, `spec:1:11: option binaries: "a b" is not a machine key (letters, digits and _-., or "*")`},
		{"args not a list", `binaries={x=/a},args=4`, `spec:1:22: option args: want a {value,...} list, found '4'`},
		{"args nested list", `binaries={x=/a},args={{a}}`, `spec:1:23: option args: lists do not nest`},
		{"args empty item", `binaries={x=/a},args={a,,b}`, `spec:1:25: option args: missing value (write "" for an empty string)`},
		{"args trailing comma", `binaries={x=/a},args={a,}`, `spec:1:25: option args: missing value (write "" for an empty string)`},
		{"args unterminated", `binaries={x=/a},args={a`, `spec:1:24: option args: unterminated list (missing '}')`},
		{"args quote inside bare word", `binaries={x=/a},args={a"b"}`, `spec:1:24: option args: unexpected '"' inside a bare word (quote the whole value)`},
		{"args brace inside bare word", `binaries={x=/a},args={a{b}`, `spec:1:24: option args: unexpected '{' inside a bare word (quote the whole value)`},
		{"args junk after quoted", `binaries={x=/a},args={"a" b}`, `spec:1:27: option args: unexpected 'b' after a quoted string`},
		{"args separator missing", `binaries={x=/a},args={"a""b"}`, `spec:1:26: option args: unexpected '"' after a quoted string`},
		{"unterminated quote", `binaries={x=/a},args={"abc}`, `spec:1:23: option args: unterminated quoted string`},
		{"unterminated quote after backslash", `binaries={x=/a},args={"ab\`, `spec:1:23: option args: unterminated quoted string`},
		{"unknown escape", `binaries={x=/a},args={"a\nb"}`, `spec:1:25: option args: unknown escape in quoted string (only \" and \\ are escapes)`},
		{"NUL in argument", "binaries={x=/a},args={\"a\x00\"}", `spec:1:23: option args: "a\x00" contains a NUL byte`},
		{"env not NAME=value", `binaries={x=/a},env={DISPLAY}`, `spec:1:22: option env: "DISPLAY" is not of the form NAME=value`},
		{"env bad name", `binaries={x=/a},env={"1A=b"}`, `spec:1:22: option env: "1A=b" is not of the form NAME=value`},
		{"env empty name", `binaries={x=/a},env={=b}`, `spec:1:22: option env: "=b" is not of the form NAME=value`},
		{"name with space", `binaries={x=/a},symb_name="my job"`, `spec:1:27: option symb_name: "my job" is not a valid name (letters, digits and _-. only, not starting with - or .)`},
		{"name starting with dash", `binaries={x=/a},symb_name=-x`, `spec:1:27: option symb_name: "-x" is not a valid name (letters, digits and _-. only, not starting with - or .)`},
		{"name all digits", `binaries={x=/a},symb_name=42`, `spec:1:27: option symb_name: "42" is all digits and would read as a job id`},
		{"name empty", `binaries={x=/a},symb_name=""`, `spec:1:27: option symb_name: the name is empty`},
		{"name too long", `binaries={x=/a},symb_name=` + strings.Repeat("a", 65), `spec:1:27: option symb_name: "` + strings.Repeat("a", 65) + `" is longer than 64 characters`},
		{"name list", `binaries={x=/a},symb_name={a}`, `spec:1:27: option symb_name: want a single value, not a {...} list`},
		{"position on second line", "binaries={x=/a},\n  min=zero", `spec:2:7: option min: "zero" is not a positive integer`},
		{"position counts characters", `binaries={x=/ä},min=x`, `spec:1:21: option min: "x" is not a positive integer`},
		{"invalid UTF-8", "binaries={x=/a\xff}", `spec:1:15: the spec is not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %#v, want error %q", tt.in, got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q) error:\n got %s\nwant %s", tt.in, err, tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("Parse(%q) error is %T, want *Error", tt.in, err)
			}
		})
	}
}

func TestErrorOption(t *testing.T) {
	_, err := Parse(`binaries={x=/a},min=x`)
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("got %T, want *Error", err)
	}
	if se.Option != "min" {
		t.Errorf("got option %q, want %q", se.Option, "min")
	}
}

func TestValidate(t *testing.T) {
	ok := map[string]string{"x86_64": "/bin/sh"}
	tests := []struct {
		name string
		in   client.JobSpec
		want string // "" means valid
	}{
		{"valid", client.JobSpec{Binaries: ok, Min: 2, Name: "a", Env: []string{"A=b"}, Args: []string{""}}, ""},
		{"zero min means one", client.JobSpec{Binaries: ok}, ""},
		{"no binaries", client.JobSpec{}, "option binaries is required"},
		{"bad key", client.JobSpec{Binaries: map[string]string{"a b": "/x"}}, `option binaries: "a b" is not a machine key (letters, digits and _-., or "*")`},
		{"empty path", client.JobSpec{Binaries: map[string]string{"x": ""}}, "option binaries: key x: empty binary path"},
		{"negative min", client.JobSpec{Binaries: ok, Min: -1}, `option min: "-1" is not a positive integer`},
		{"bad name", client.JobSpec{Binaries: ok, Name: "a b"}, `option symb_name: "a b" is not a valid name (letters, digits and _-. only, not starting with - or .)`},
		{"bad env", client.JobSpec{Binaries: ok, Env: []string{"nope"}}, `option env: "nope" is not of the form NAME=value`},
		{"NUL arg", client.JobSpec{Binaries: ok, Args: []string{"\x00"}}, `option args: "\x00" contains a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.in)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckNameAndEnv(t *testing.T) {
	if err := CheckName("job-1.x"); err != nil {
		t.Errorf("CheckName(job-1.x) = %v, want nil", err)
	}
	if err, want := CheckName("7"), `option symb_name: "7" is all digits and would read as a job id`; err == nil || err.Error() != want {
		t.Errorf("CheckName(7) = %v, want %s", err, want)
	}
	if err := CheckEnv("PATH=/bin"); err != nil {
		t.Errorf("CheckEnv(PATH=/bin) = %v, want nil", err)
	}
	if err, want := CheckEnv("PATH"), `option env: "PATH" is not of the form NAME=value`; err == nil || err.Error() != want {
		t.Errorf("CheckEnv(PATH) = %v, want %s", err, want)
	}
}
