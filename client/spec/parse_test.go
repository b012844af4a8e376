package spec

import (
	"errors"
	"math"
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
			name: "every option",
			in: `binaries={sparc=/a},min=2,symb_name=j,args={x},env={A=b},keys={mathlab,fpu},mem>10,rating>=8,` +
				`nprocs<4,mem==32,swap!=0,speed<=1.5,mounts={/usr/u/fred/data},machines={flute,viola},unique,` +
				`max_per_machine=1,load=0.5,memory=512,queue=NEW_Q,restart=on-failure,max_restarts=3,` +
				`mail=fred@cs.cornell.edu,cron="0 3 * * *",after=job1,copy_in={in.dat},copy_out={out.dat,log}`,
			want: client.JobSpec{
				Binaries: map[string]string{"sparc": "/a"}, Min: 2, Name: "j", Args: []string{"x"}, Env: []string{"A=b"},
				Keys: []string{"mathlab", "fpu"},
				Requirements: []client.Requirement{
					{Attr: "mem", Op: ">", Value: 10}, {Attr: "rating", Op: ">=", Value: 8},
					{Attr: "nprocs", Op: "<", Value: 4}, {Attr: "mem", Op: "==", Value: 32},
					{Attr: "swap", Op: "!=", Value: 0}, {Attr: "speed", Op: "<=", Value: 1.5},
				},
				Mounts: []string{"/usr/u/fred/data"}, Machines: []string{"flute", "viola"},
				Unique: true, MaxPerMachine: 1, Load: 0.5, MemoryMB: 512, Queue: "NEW_Q",
				Restart: client.RestartOnFailure, MaxRestarts: 3,
				Mail: "fred@cs.cornell.edu", Cron: "0 3 * * *", After: []string{"job1"},
				CopyIn: []string{"in.dat"}, CopyOut: []string{"out.dat", "log"},
			},
		},
		{
			name: "comparisons with spaces, signs, fractions and exponents",
			in:   "binaries={x=/a}, mem >= 10.5 , temp<-3,big<1e3,\n small > .25 , q==\"7\"",
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Requirements: []client.Requirement{
				{Attr: "mem", Op: ">=", Value: 10.5}, {Attr: "temp", Op: "<", Value: -3},
				{Attr: "big", Op: "<", Value: 1000}, {Attr: "small", Op: ">", Value: 0.25},
				{Attr: "q", Op: "==", Value: 7},
			}},
		},
		{
			name: "same attribute with different operators",
			in:   `binaries={x=/a},mem>10,mem<64`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Requirements: []client.Requirement{
				{Attr: "mem", Op: ">", Value: 10}, {Attr: "mem", Op: "<", Value: 64},
			}},
		},
		{
			name: "bare mail mails the owner",
			in:   `binaries={x=/a},mail`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Mail: MailOwner},
		},
		{
			name: "mail types, one or a list",
			in:   `binaries={x=/a},mail=ops@example.org,mail_type={begin,end,requeue}`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Mail: "ops@example.org", MailType: []string{"begin", "end", "requeue"}},
		},
		{
			name: "one mail type",
			in:   `binaries={x=/a},mail,mail_type=all`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Mail: MailOwner, MailType: []string{"all"}},
		},
		{
			name: "gang",
			in:   `binaries={x=/a},min=3,gang`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Min: 3, Gang: true},
		},
		{
			name: "gang written out",
			in:   `binaries={x=/a},gang=false`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}},
		},
		{
			name: "unique written out",
			in:   `binaries={x=/a},unique=true`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Unique: true},
		},
		{
			name: "unique false with max_per_machine",
			in:   `binaries={x=/a},unique=false,max_per_machine=3`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, MaxPerMachine: 3},
		},
		{
			name: "unique with max_per_machine 1",
			in:   `max_per_machine=1,unique,binaries={x=/a}`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Unique: true, MaxPerMachine: 1},
		},
		{
			name: "restart no and always",
			in:   `binaries={x=/a},restart=always,max_restarts=5`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Restart: client.RestartAlways, MaxRestarts: 5},
		},
		{
			name: "restart no",
			in:   `binaries={x=/a},restart=no`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, Restart: client.RestartNo},
		},
		{
			name: "after a job id",
			in:   `binaries={x=/a},after=42`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, After: []string{"42"}},
		},
		{
			name: "dependencies by name and id, alone and in lists",
			in:   `binaries={x=/a},after={build,12},afterok=test,afternotok={13}`,
			want: client.JobSpec{Binaries: map[string]string{"x": "/a"}, After: []string{"build", "12"}, AfterOK: []string{"test"}, AfterNotOK: []string{"13"}},
		},
		{
			name: "mtype names as keys",
			in:   `binaries={sparc1+=/a},keys={sparc1+}`,
			want: client.JobSpec{Binaries: map[string]string{"sparc1+": "/a"}, Keys: []string{"sparc1+"}},
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
		{"attribute assigned", `binaries={x=/bin/sh},mem=10`, `spec:1:22: unknown option mem (to compare a machine attribute write mem==10 or mem>=10)`},
		{"misspelt option", `binaries={x=/bin/sh},uniqe`, `spec:1:22: unknown option uniqe (did you mean unique?)`},
		{"key written alone", `binaries={x=/bin/sh},mathlab`, `spec:1:22: unknown option mathlab (to require the key mathlab write keys={mathlab})`},
		{"duplicate option", `binaries={x=/bin/sh},min=1,min=2`, `spec:1:28: option min: given twice (first at 1:22)`},
		{"missing equals", `binaries={x=/bin/sh},min 3`, `spec:1:26: option min: expected '=' after the option name, found '3'`},
		{"option name missing", `,binaries={x=/bin/sh}`, `spec:1:1: expected an option name, found ','`},
		{"trailing comma", `binaries={x=/bin/sh},`, `spec:1:22: expected an option name, found end of spec`},
		{"garbage after value", `binaries={x=/bin/sh} min=3`, `spec:1:22: expected ',' or end of spec, found 'm'`},
		{"close brace at top level", `binaries={x=/bin/sh},min=3}`, `spec:1:27: expected ',' or end of spec, found '}'`},
		{"binaries not a list", `binaries=/bin/sh`, `spec:1:10: option binaries: want a {key=path,...} list, found '/'`},
		{"binaries empty", `binaries={}`, `spec:1:11: option binaries: needs at least one key=path`},
		{"binaries missing equals", `binaries={/bin/sh}`, `spec:1:11: option binaries: "/bin/sh" is not a machine key (letters, digits and _-.+, or "*")`},
		{"binaries key without path", `binaries={x86_64}`, `spec:1:17: option binaries: expected '=' after key x86_64, found '}'`},
		{"binaries empty path", `binaries={x86_64=""}`, `spec:1:18: option binaries: key x86_64: empty binary path`},
		{"binaries missing path", `binaries={x86_64=}`, `spec:1:18: option binaries: missing value (write "" for an empty string)`},
		{"binaries duplicate key", `binaries={x=/a,x=/b}`, `spec:1:16: option binaries: key x given twice`},
		{"binaries nested list", `binaries={x={/a}}`, `spec:1:13: option binaries: lists do not nest`},
		{"binaries unterminated", `binaries={x=/a`, `spec:1:15: option binaries: unterminated list (missing '}')`},
		{"binaries bad key", `binaries={"a b"=/bin/sh}`, `spec:1:11: option binaries: "a b" is not a machine key (letters, digits and _-.+, or "*")`},
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
		{"comparison not a number", `binaries={x=/a},mem>ten`, `spec:1:21: option mem>: "ten" is not a number`},
		{"comparison hex", `binaries={x=/a},mem>0x10`, `spec:1:21: option mem>: "0x10" is not a number`},
		{"comparison inf", `binaries={x=/a},mem<inf`, `spec:1:21: option mem<: "inf" is not a number`},
		{"comparison out of range", `binaries={x=/a},mem<1e400`, `spec:1:21: option mem<: "1e400" is out of range`},
		{"comparison missing number", `binaries={x=/a},mem>`, `spec:1:21: option mem>: missing value (write "" for an empty string)`},
		{"comparison list", `binaries={x=/a},mem>{1}`, `spec:1:21: option mem>: want a number, not a {...} list`},
		{"comparison on an option", `binaries={x=/a},min>3`, `spec:1:17: option min>: min is an option, not a machine attribute (write min=...)`},
		{"comparison twice", `binaries={x=/a},mem>1,mem>2`, `spec:1:23: option mem>: given twice (first at 1:17)`},
		{"comparison arrow", `binaries={x=/a},mem=>1`, `spec:1:17: unknown option mem`},
		{"keys not a list", `binaries={x=/a},keys=fpu`, `spec:1:22: option keys: want a {value,...} list, found 'f'`},
		{"keys bad key", `binaries={x=/a},keys={"a b"}`, `spec:1:23: option keys: "a b" is not a machine key (letters, digits and _-.+)`},
		{"keys repeated", `binaries={x=/a},keys={fpu,fpu}`, `spec:1:27: option keys: key fpu given twice`},
		{"keys twice", `binaries={x=/a},keys={a},keys={b}`, `spec:1:26: option keys: given twice (first at 1:17)`},
		{"mounts relative", `binaries={x=/a},mounts={usr/data}`, `spec:1:25: option mounts: "usr/data" is not an absolute path`},
		{"mounts repeated", `binaries={x=/a},mounts={/d,/d}`, `spec:1:28: option mounts: mount /d given twice`},
		{"machines bad name", `binaries={x=/a},machines={"flute viola"}`, `spec:1:27: option machines: "flute viola" is not a machine name (letters, digits and _-.+)`},
		{"unique not a bool", `binaries={x=/a},unique=maybe`, `spec:1:24: option unique: "maybe" is not true or false`},
		{"unique twice", `binaries={x=/a},unique,unique`, `spec:1:24: option unique: given twice (first at 1:17)`},
		{"unique and max_per_machine", `binaries={x=/a},unique,max_per_machine=2`, `spec:1:24: option max_per_machine: conflicts with unique (unique means at most 1 instance per machine)`},
		{"max_per_machine and unique", `binaries={x=/a},max_per_machine=2,unique=true`, `spec:1:17: option max_per_machine: conflicts with unique (unique means at most 1 instance per machine)`},
		{"max_per_machine zero", `binaries={x=/a},max_per_machine=0`, `spec:1:33: option max_per_machine: "0" is not a positive integer`},
		{"load zero", `binaries={x=/a},load=0`, `spec:1:22: option load: "0" is not a positive number`},
		{"load negative", `binaries={x=/a},load=-1.5`, `spec:1:22: option load: "-1.5" is not a positive number`},
		{"load not a number", `binaries={x=/a},load=high`, `spec:1:22: option load: "high" is not a positive number`},
		{"memory zero", `binaries={x=/a},memory=0`, `spec:1:24: option memory: "0" is not a positive integer`},
		{"memory fraction", `binaries={x=/a},memory=1.5`, `spec:1:24: option memory: "1.5" is not a positive integer`},
		{"queue bad name", `binaries={x=/a},queue="new q"`, `spec:1:23: option queue: "new q" is not a queue name (letters, digits and _-.+)`},
		{"restart unknown", `binaries={x=/a},restart=sometimes`, `spec:1:25: option restart: "sometimes" is not a restart policy (no, on-failure or always)`},
		{"max_restarts without restart", `binaries={x=/a},max_restarts=3`, `spec:1:17: option max_restarts: needs restart=on-failure or restart=always`},
		{"max_restarts with restart no", `max_restarts=3,restart=no,binaries={x=/a}`, `spec:1:1: option max_restarts: needs restart=on-failure or restart=always`},
		{"max_restarts zero", `binaries={x=/a},restart=always,max_restarts=0`, `spec:1:45: option max_restarts: "0" is not a positive integer`},
		{"mail empty", `binaries={x=/a},mail=""`, `spec:1:22: option mail: empty address (write mail alone to mail the job's owner)`},
		{"mail with space", `binaries={x=/a},mail="fred smith"`, `spec:1:22: option mail: "fred smith" is not a mail address (no spaces or control characters)`},
		{"mail list", `binaries={x=/a},mail={fred}`, `spec:1:22: option mail: want a single value, not a {...} list`},
		{"mail twice", `binaries={x=/a},mail,mail=fred`, `spec:1:22: option mail: given twice (first at 1:17)`},
		{"bad mail type", `binaries={x=/a},mail,mail_type={end,often}`, `spec:1:37: option mail_type: "often" is not a mail type (begin, end, fail, requeue or all)`},
		{"mail type twice", `binaries={x=/a},mail,mail_type={end,end}`, `spec:1:37: option mail_type: mail type end given twice`},
		{"mail type without mail", `binaries={x=/a},mail_type=end`, `spec:1:17: option mail_type: needs mail or mail=ADDRESS`},
		{"cron empty", `binaries={x=/a},cron=" "`, `spec:1:22: option cron: empty schedule (write cron="MIN HOUR DAY MONTH WEEKDAY")`},
		{"catchup unknown", `binaries={x=/a},cron=@daily,catchup=all`, `spec:1:37: option catchup: "all" is not a catch-up policy (none or last)`},
		{"overlap unknown", `binaries={x=/a},cron=@daily,overlap=queue`, `spec:1:37: option overlap: "queue" is not an overlap policy (skip or allow)`},
		{"catchup without cron", `binaries={x=/a},catchup=none`, `spec:1:17: option catchup: applies to cron jobs only (add cron="MIN HOUR DAY MONTH WEEKDAY")`},
		{"after bad job", `binaries={x=/a},after="job 1"`, `spec:1:23: option after: "job 1" is neither a job id nor a job name`},
		{"afterok bad job in a list", `binaries={x=/a},afterok={a,"b c"}`, `spec:1:28: option afterok: "b c" is neither a job id nor a job name`},
		{"afternotok job twice", `binaries={x=/a},afternotok={a,a}`, `spec:1:31: option afternotok: job a given twice`},
		{"after empty list", `binaries={x=/a},after={}`, `spec:1:24: option after: the list names no job`},
		{"copy_in empty file", `binaries={x=/a},copy_in={""}`, `spec:1:26: option copy_in: empty file name`},
		{"copy_out not a list", `binaries={x=/a},copy_out=out`, `spec:1:26: option copy_out: want a {value,...} list, found 'o'`},
		{"bare option that needs a value", `binaries={x=/a},min`, `spec:1:20: option min: expected '=' after the option name, found end of spec`},
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
		{"bad key", client.JobSpec{Binaries: map[string]string{"a b": "/x"}}, `option binaries: "a b" is not a machine key (letters, digits and _-.+, or "*")`},
		{"empty path", client.JobSpec{Binaries: map[string]string{"x": ""}}, "option binaries: key x: empty binary path"},
		{"negative min", client.JobSpec{Binaries: ok, Min: -1}, `option min: "-1" is not a positive integer`},
		{"bad name", client.JobSpec{Binaries: ok, Name: "a b"}, `option symb_name: "a b" is not a valid name (letters, digits and _-. only, not starting with - or .)`},
		{"bad env", client.JobSpec{Binaries: ok, Env: []string{"nope"}}, `option env: "nope" is not of the form NAME=value`},
		{"NUL arg", client.JobSpec{Binaries: ok, Args: []string{"\x00"}}, `option args: "\x00" contains a NUL byte`},
		{"every option", client.JobSpec{
			Binaries: ok, Keys: []string{"fpu"}, Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}},
			Mounts: []string{"/d"}, Machines: []string{"flute"}, Unique: true, MaxPerMachine: 1, Load: 2, MemoryMB: 64,
			Queue: "q", Restart: client.RestartAlways, MaxRestarts: 2, Mail: MailOwner, Cron: "* * * * *", After: []string{"7"},
			AfterOK: []string{"build", "8"}, AfterNotOK: []string{"9"},
			CopyIn: []string{"a"}, CopyOut: []string{"b"},
		}, ""},
		{"bad key", client.JobSpec{Binaries: ok, Keys: []string{"a b"}}, `option keys: "a b" is not a machine key (letters, digits and _-.+)`},
		{"repeated key", client.JobSpec{Binaries: ok, Keys: []string{"a", "a"}}, `option keys: key a given twice`},
		{"bad dependency", client.JobSpec{Binaries: ok, AfterOK: []string{"a b"}}, `option afterok: "a b" is neither a job id nor a job name`},
		{"repeated dependency", client.JobSpec{Binaries: ok, After: []string{"7", "7"}}, `option after: job 7 given twice`},
		{"comparison on option", client.JobSpec{Binaries: ok, Requirements: []client.Requirement{{Attr: "min", Op: ">", Value: 1}}},
			`comparison min>1: min is an option, not a machine attribute (write min=...)`},
		{"bad operator", client.JobSpec{Binaries: ok, Requirements: []client.Requirement{{Attr: "mem", Op: "=", Value: 1}}},
			`comparison on mem: "=" is not an operator (one of > >= < <= == !=)`},
		{"NaN comparison", client.JobSpec{Binaries: ok, Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: math.NaN()}}},
			`option mem>: NaN is not a finite number`},
		{"repeated comparison", client.JobSpec{Binaries: ok, Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 1}, {Attr: "mem", Op: ">", Value: 2}}},
			`option mem>: given twice`},
		{"relative mount", client.JobSpec{Binaries: ok, Mounts: []string{"d"}}, `option mounts: "d" is not an absolute path`},
		{"bad machine", client.JobSpec{Binaries: ok, Machines: []string{"a/b"}}, `option machines: "a/b" is not a machine name (letters, digits and _-.+)`},
		{"unique and max_per_machine", client.JobSpec{Binaries: ok, Unique: true, MaxPerMachine: 2},
			`option max_per_machine: conflicts with unique (unique means at most 1 instance per machine)`},
		{"negative max_per_machine", client.JobSpec{Binaries: ok, MaxPerMachine: -1}, `option max_per_machine: "-1" is not a positive integer`},
		{"negative load", client.JobSpec{Binaries: ok, Load: -1}, `option load: "-1" is not a positive number`},
		{"infinite load", client.JobSpec{Binaries: ok, Load: math.Inf(1)}, `option load: "+Inf" is not a positive number`},
		{"negative memory", client.JobSpec{Binaries: ok, MemoryMB: -1}, `option memory: "-1" is not a positive integer`},
		{"bad queue", client.JobSpec{Binaries: ok, Queue: "a b"}, `option queue: "a b" is not a queue name (letters, digits and _-.+)`},
		{"bad restart", client.JobSpec{Binaries: ok, Restart: "yes"}, `option restart: "yes" is not a restart policy (no, on-failure or always)`},
		{"max_restarts without restart", client.JobSpec{Binaries: ok, MaxRestarts: 1}, `option max_restarts: needs restart=on-failure or restart=always`},
		{"negative max_restarts", client.JobSpec{Binaries: ok, MaxRestarts: -1}, `option max_restarts: "-1" is not a positive integer`},
		{"bad mail", client.JobSpec{Binaries: ok, Mail: "a b"}, `option mail: "a b" is not a mail address (no spaces or control characters)`},
		{"bad mail type", client.JobSpec{Binaries: ok, Mail: "a", MailType: []string{"never"}}, `option mail_type: "never" is not a mail type (begin, end, fail, requeue or all)`},
		{"mail type without mail", client.JobSpec{Binaries: ok, MailType: []string{"end"}}, `option mail_type: needs mail or mail=ADDRESS`},
		{"blank cron", client.JobSpec{Binaries: ok, Cron: " "}, `option cron: empty schedule (write cron="MIN HOUR DAY MONTH WEEKDAY")`},
		{"overlap without cron", client.JobSpec{Binaries: ok, Overlap: "allow"}, `option overlap: applies to cron jobs only (add cron="MIN HOUR DAY MONTH WEEKDAY")`},
		{"bad catchup", client.JobSpec{Binaries: ok, Cron: "@daily", Catchup: "x"}, `option catchup: "x" is not a catch-up policy (none or last)`},
		{"bad after", client.JobSpec{Binaries: ok, After: []string{"-x"}}, `option after: "-x" is neither a job id nor a job name`},
		{"empty copy_out", client.JobSpec{Binaries: ok, CopyOut: []string{""}}, `option copy_out: empty file name`},
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

func TestParseRequirement(t *testing.T) {
	tests := []struct {
		in      string
		want    client.Requirement
		wantErr string
	}{
		{in: "mem>10", want: client.Requirement{Attr: "mem", Op: ">", Value: 10}},
		{in: " rating >= 8 ", want: client.Requirement{Attr: "rating", Op: ">=", Value: 8}},
		{in: "nprocs<4", want: client.Requirement{Attr: "nprocs", Op: "<", Value: 4}},
		{in: "mem==32", want: client.Requirement{Attr: "mem", Op: "==", Value: 32}},
		{in: "speed<=0.5", want: client.Requirement{Attr: "speed", Op: "<=", Value: 0.5}},
		{in: "x!=-1", want: client.Requirement{Attr: "x", Op: "!=", Value: -1}},
		{in: "mem=10", wantErr: `"mem=10" is not a comparison ATTR OP NUMBER (OP one of > >= < <= == !=), e.g. mem>10`},
		{in: ">10", wantErr: `">10" is not a comparison ATTR OP NUMBER (OP one of > >= < <= == !=), e.g. mem>10`},
		{in: "", wantErr: `"" is not a comparison ATTR OP NUMBER (OP one of > >= < <= == !=), e.g. mem>10`},
		{in: "mem>ten", wantErr: `option mem>: "ten" is not a number`},
		{in: "mem>", wantErr: `option mem>: missing value (write "" for an empty string)`},
		{in: "mem>10,rating>8", wantErr: `option mem>: unexpected ',' after the number`},
		{in: "memory>10", wantErr: `option memory>: memory is an option, not a machine attribute (write memory=...)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRequirement(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseRequirement(%q) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRequirement(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseRequirement(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if back, err := ParseRequirement(FormatRequirement(got)); err != nil || back != got {
				t.Errorf("ParseRequirement(FormatRequirement(%+v)) = %+v, %v", got, back, err)
			}
		})
	}
}
