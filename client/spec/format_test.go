package spec

import (
	"reflect"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		in   client.JobSpec
		want string
	}{
		{
			name: "all options sorted",
			in: client.JobSpec{
				Name:     "job1",
				Binaries: map[string]string{"x86_64": "/bin/sh", "sparc": "/usr/u/isis/bin/test"},
				Args:     []string{"-c", "echo hi"},
				Env:      []string{"A=b"},
				Min:      3,
			},
			want: `args={-c,"echo hi"},binaries={sparc=/usr/u/isis/bin/test,x86_64=/bin/sh},env={A=b},min=3,symb_name=job1`,
		},
		{
			name: "binaries only",
			in:   client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}},
			want: `binaries={*=/bin/true}`,
		},
		{
			name: "quoting",
			in: client.JobSpec{
				Binaries: map[string]string{"x": "/opt/my prog"},
				Args:     []string{"", `a"b`, `c\d`, "e,f", "{g}", "ü", "tab\there"},
			},
			want: `args={"","a\"b","c\\d","e,f","{g}","ü","tab	here"},binaries={x="/opt/my prog"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format(tt.in); got != tt.want {
				t.Errorf("Format() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	inputs := []string{
		`binaries={sparc=/usr/u/isis/bin/test},min=3,symb_name=job1,env={"DISPLAY=flute"},args={4}`,
		`binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={"A=b"},args={-c,"echo hi"}`,
		`binaries={"*"=/bin/sh,mips=/u/m},args={"","\\","\"",",","}","{"," lead","trail "}`,
		`binaries={x=/a=b},env={A=b=c,"B= spaced "}`,
	}
	for _, in := range inputs {
		t.Run(in, func(t *testing.T) {
			first, err := Parse(in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", in, err)
			}
			out := Format(first)
			second, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(Format()) of %q: %v", out, err)
			}
			if !reflect.DeepEqual(first, second) {
				t.Errorf("round trip through %q: got %#v, want %#v", out, second, first)
			}
			if again := Format(second); again != out {
				t.Errorf("Format is not stable: got %q, want %q", again, out)
			}
		})
	}
}
