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
			name: "what to run, in the order of the paper's form",
			in: client.JobSpec{
				Name:     "job1",
				Binaries: map[string]string{"x86_64": "/bin/sh", "sparc": "/usr/u/isis/bin/test"},
				Args:     []string{"-c", "echo hi"},
				Env:      []string{"A=b"},
				Min:      3,
			},
			want: `binaries={sparc=/usr/u/isis/bin/test,x86_64=/bin/sh},min=3,symb_name=job1,args={-c,"echo hi"},env={A=b}`,
		},
		{
			name: "every option",
			in: client.JobSpec{
				Binaries: map[string]string{"sparc": "/a"}, Min: 2, Name: "j",
				Keys: []string{"mathlab", "fpu"},
				Requirements: []client.Requirement{
					{Attr: "mem", Op: ">", Value: 10}, {Attr: "rating", Op: ">=", Value: 8.5},
					{Attr: "nprocs", Op: "!=", Value: -1}, {Attr: "big", Op: "<", Value: 1e21},
				},
				Mounts: []string{"/usr/u/fred/data"}, Machines: []string{"flute", "viola"},
				Unique: true, MaxPerMachine: 1, Load: 0.25, MemoryMB: 512, Queue: "NEW_Q",
				Restart: client.RestartOnFailure, MaxRestarts: 3,
				Mail: "fred@cs.cornell.edu", Cron: "0 3 * * *", After: []string{"job1"},
				CopyIn: []string{"in.dat"}, CopyOut: []string{"out dir/x"},
			},
			want: `binaries={sparc=/a},min=2,symb_name=j,keys={mathlab,fpu},mem>10,rating>=8.5,nprocs!=-1,big<1e+21,` +
				`mounts={/usr/u/fred/data},machines={flute,viola},unique,max_per_machine=1,load=0.25,memory=512,` +
				`queue=NEW_Q,restart=on-failure,max_restarts=3,mail=fred@cs.cornell.edu,cron="0 3 * * *",after=job1,` +
				`copy_in={in.dat},copy_out={"out dir/x"}`,
		},
		{
			name: "bare mail is the owner",
			in:   client.JobSpec{Binaries: map[string]string{"sparc": "/usr/u/fred/test"}, Min: 3, Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}}, Mail: MailOwner},
			want: `binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail`,
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
			want: `binaries={x="/opt/my prog"},args={"","a\"b","c\\d","e,f","{g}","ü","tab	here"}`,
		},
		{
			name: "a value starting with = is quoted: cron==x reads as a comparison",
			in:   client.JobSpec{Binaries: map[string]string{"x": "/a"}, Cron: "=", Args: []string{"=b"}},
			want: `binaries={x=/a},args={"=b"},cron="="`,
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
		`binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail`,
		`binaries={sparc=/usr/u/fred/sparc/test,mips=/usr/u/fred/mips/test},min=4,args={4},mounts={/usr/u/fred/data},symb_name=test1`,
		`binaries={x=/a},keys={mathlab},rating>=8,nprocs<4,mem==32,x!=-0.5,machines={flute,viola},unique,max_per_machine=1`,
		`binaries={x=/a},load=1.5,memory=64,queue=NEW_Q,restart=always,max_restarts=2,mail=fred,cron="*/5 * * * *",catchup=none,overlap=allow,after=12,copy_in={a,"b c"},copy_out={d}`,
		`binaries={x=/a},unique=false,mail=owner,restart=no`,
		`binaries={x=/a},min=4,gang,restart=on-failure`,
		`binaries={x=/a},mail=a@b.c,mail_type={begin,fail}`,
		`binaries={x=/a},after={build,12},afterok=test,afternotok={"a.b",13}`,
		`binaries={0=0},cron="="`,
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
