package main

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestIsSpecString(t *testing.T) {
	tests := []struct {
		arg  string
		want bool
	}{
		{"binaries={x86_64=/bin/sh}", true},
		{"  min = 3,binaries={x=/a}", true},
		{"symb_name=x", true},
		{"foo=bar", true},
		{"/bin/sh", false},
		{"./a=b", false},
		{"sleep", false},
		{"", false},
		{"=x", false},
		{"1a=b", false},
		{"-n", false},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			if got := isSpecString(tt.arg); got != tt.want {
				t.Errorf("isSpecString(%q) = %v, want %v", tt.arg, got, tt.want)
			}
		})
	}
}

func TestBuildSpec(t *testing.T) {
	tests := []struct {
		name string
		in   execArgs
		want client.JobSpec
	}{
		{
			name: "binary only",
			in:   execArgs{Positional: []string{"/bin/true"}},
			want: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}},
		},
		{
			name: "binary with arguments and flags",
			in: execArgs{
				Positional: []string{"/bin/sh", "-c", "echo hi"},
				Instances:  3, InstancesSet: true, Name: "job1", Env: []string{"A=b", "C=d,e"},
			},
			want: client.JobSpec{
				Name: "job1", Min: 3, Env: []string{"A=b", "C=d,e"},
				Binaries: map[string]string{client.AnyKey: "/bin/sh"},
				Args:     []string{"-c", "echo hi"},
			},
		},
		{
			name: "gang",
			in:   execArgs{Positional: []string{"/bin/mpi"}, Instances: 4, InstancesSet: true, Gang: true, Unique: true},
			want: client.JobSpec{Min: 4, Gang: true, Unique: true, Binaries: map[string]string{client.AnyKey: "/bin/mpi"}},
		},
		{
			name: "gang in the spec string",
			in:   execArgs{Positional: []string{`binaries={x86_64=/bin/mpi},min=4,gang`}},
			want: client.JobSpec{Min: 4, Gang: true, Binaries: map[string]string{"x86_64": "/bin/mpi"}},
		},
		{
			name: "spec string",
			in:   execArgs{Positional: []string{`binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={"A=b"},args={-c,"echo hi"}`}},
			want: client.JobSpec{
				Name: "job1", Min: 3, Env: []string{"A=b"},
				Binaries: map[string]string{"x86_64": "/bin/sh"},
				Args:     []string{"-c", "echo hi"},
			},
		},
		{
			name: "paper example 1",
			in:   execArgs{Positional: []string{`binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail`}},
			want: client.JobSpec{
				Min: 3, Binaries: map[string]string{"sparc": "/usr/u/fred/test"},
				Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}}, Mail: "owner",
			},
		},
		{
			name: "mail types as flags",
			in:   execArgs{Positional: []string{"/bin/backup"}, MailTo: "ops@example.org", MailType: []string{"begin", "end"}},
			want: client.JobSpec{
				Binaries: map[string]string{client.AnyKey: "/bin/backup"}, Mail: "ops@example.org", MailType: []string{"begin", "end"},
			},
		},
		{
			name: "paper example 1 as flags",
			in: execArgs{
				Positional: []string{"/usr/u/fred/test"}, Instances: 3, InstancesSet: true,
				Keys: []string{"sparc"}, Require: []string{"mem>10"}, Mail: true,
			},
			want: client.JobSpec{
				Min: 3, Binaries: map[string]string{client.AnyKey: "/usr/u/fred/test"}, Keys: []string{"sparc"},
				Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}}, Mail: "owner",
			},
		},
		{
			name: "every flag",
			in: execArgs{
				Positional: []string{"/bin/sh", "-c", "true"},
				Keys:       []string{"mathlab,fpu", "xfpu"}, Require: []string{"mem>10", "rating>=8,nprocs<4"},
				Mounts: []string{"/usr/u/fred/data"}, Machines: []string{"flute,viola"}, Unique: true,
				MaxPerMachine: 1, MaxPerMachineSet: true, Load: 0.5, LoadSet: true, MemoryMB: 512, MemorySet: true,
				Queue: "NEW_Q", Restart: "on-failure", MaxRestarts: 3, MaxRestartsSet: true,
				Mail: true, MailTo: "fred@cs.cornell.edu", Cron: "0 3 * * *", Catchup: "none", Overlap: "allow", After: []string{"job1,7"},
				AfterOK: []string{"build"}, AfterNotOK: []string{"a", "b"},
				CopyIn: []string{"in.dat"}, CopyOut: []string{"out.dat,log"},
			},
			want: client.JobSpec{
				Binaries: map[string]string{client.AnyKey: "/bin/sh"}, Args: []string{"-c", "true"},
				Keys: []string{"mathlab", "fpu", "xfpu"},
				Requirements: []client.Requirement{
					{Attr: "mem", Op: ">", Value: 10}, {Attr: "rating", Op: ">=", Value: 8}, {Attr: "nprocs", Op: "<", Value: 4},
				},
				Mounts: []string{"/usr/u/fred/data"}, Machines: []string{"flute", "viola"}, Unique: true,
				MaxPerMachine: 1, Load: 0.5, MemoryMB: 512, Queue: "NEW_Q", Restart: "on-failure", MaxRestarts: 3,
				Mail: "fred@cs.cornell.edu", Cron: "0 3 * * *", Catchup: "none", Overlap: "allow", After: []string{"job1", "7"},
				AfterOK: []string{"build"}, AfterNotOK: []string{"a", "b"},
				CopyIn: []string{"in.dat"}, CopyOut: []string{"out.dat", "log"},
			},
		},
		{
			name: "spec string plus placement flags",
			in: execArgs{
				Positional: []string{`binaries={sparc=/usr/u/fred/sparc/test,mips=/usr/u/fred/mips/test},min=4,args={4},mounts={/usr/u/fred/data},symb_name=test1`},
				Unique:     true, Restart: "always",
			},
			want: client.JobSpec{
				Name: "test1", Min: 4, Args: []string{"4"}, Mounts: []string{"/usr/u/fred/data"},
				Binaries: map[string]string{"sparc": "/usr/u/fred/sparc/test", "mips": "/usr/u/fred/mips/test"},
				Unique:   true, Restart: "always",
			},
		},
		{
			name: "spec string plus flags it does not set",
			in:   execArgs{Positional: []string{`binaries={x86_64=/bin/true}`}, Instances: 2, InstancesSet: true, Name: "n", Env: []string{"A=b"}},
			want: client.JobSpec{Name: "n", Min: 2, Env: []string{"A=b"}, Binaries: map[string]string{"x86_64": "/bin/true"}},
		},
		{
			name: "--time and --signal",
			in:   execArgs{Positional: []string{"/bin/true"}, Time: "2h", Signal: "sigusr1@300"},
			want: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, TimeLimitS: 7200, WarnSignal: "USR1", WarnLeadS: 300},
		},
		{
			name: "--time in minutes, --signal's default lead",
			in:   execArgs{Positional: []string{"/bin/true"}, Time: "90", Signal: "12"},
			want: client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, TimeLimitS: 5400, WarnSignal: "USR2", WarnLeadS: 60},
		},
		{
			name: "time= and signal= in the spec string",
			in:   execArgs{Positional: []string{`binaries={x86_64=/bin/true},time=30m,signal=USR1@2m`}},
			want: client.JobSpec{Binaries: map[string]string{"x86_64": "/bin/true"}, TimeLimitS: 1800, WarnSignal: "USR1", WarnLeadS: 120},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildSpec(tt.in)
			if err != nil {
				t.Fatalf("buildSpec() error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("buildSpec() = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestBuildSpecErrors(t *testing.T) {
	const sp = `binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={"A=b"}`
	tests := []struct {
		name string
		in   execArgs
		want string
	}{
		{"nothing", execArgs{}, "missing BINARY or job spec string"},
		{"min and -n", execArgs{Positional: []string{sp}, Instances: 3, InstancesSet: true},
			"-n/--instances and min= in the spec string both set the number of instances; use one"},
		{"symb_name and --name", execArgs{Positional: []string{sp}, Name: "other"},
			"--name and symb_name= in the spec string both set the job name; use one"},
		{"env and --env", execArgs{Positional: []string{sp}, Env: []string{"B=c"}},
			"--env and env= in the spec string both set the environment; use one"},
		{"arguments after spec", execArgs{Positional: []string{sp, "x", "y"}},
			`a job spec string takes no further arguments, got ["x" "y"] after it`},
		{"flag after spec", execArgs{Positional: []string{sp, "--wait", "done"}},
			`options go before the job spec string, got "--wait" after it`},
		{"bad spec", execArgs{Positional: []string{`binaries={x86_64=/bin/sh},min=x`}},
			`spec:1:31: option min: "x" is not a positive integer`},
		{"zero instances", execArgs{Positional: []string{"/bin/true"}, Instances: 0, InstancesSet: true},
			"-n/--instances must be at least 1, got 0"},
		{"bad name", execArgs{Positional: []string{"/bin/true"}, Name: "a b"},
			`--name: option symb_name: "a b" is not a valid name (letters, digits and _-. only, not starting with - or .)`},
		{"numeric name", execArgs{Positional: []string{"/bin/true"}, Name: "12"},
			`--name: option symb_name: "12" is all digits and would read as a job id`},
		{"bad env", execArgs{Positional: []string{"/bin/true"}, Env: []string{"NOEQUALS"}},
			`--env: option env: "NOEQUALS" is not of the form NAME=value`},
		{"keys and --keys", execArgs{Positional: []string{`binaries={x=/a},keys={fpu}`}, Keys: []string{"fpu"}},
			"--keys and keys= in the spec string both set the required keys; use one"},
		{"comparison and --require", execArgs{Positional: []string{`binaries={x=/a},mem>10`}, Require: []string{"rating>8"}},
			"--require and comparisons such as mem>10 in the spec string both set the attribute requirements; use one"},
		{"unique and --unique", execArgs{Positional: []string{`binaries={x=/a},unique`}, Unique: true},
			"--unique and unique in the spec string both set one instance per machine; use one"},
		{"mail and --mail-to", execArgs{Positional: []string{`binaries={x=/a},mail`}, MailTo: "fred"},
			"--mail/--mail-to and mail in the spec string both set who is mailed; use one"},
		{"--mail-type without mail", execArgs{Positional: []string{"/bin/true"}, MailType: []string{"end"}},
			"option mail_type: needs mail or mail=ADDRESS"},
		{"bad --mail-type", execArgs{Positional: []string{"/bin/true"}, Mail: true, MailType: []string{"sometimes"}},
			`option mail_type: "sometimes" is not a mail type (begin, end, fail, requeue or all)`},
		{"restart and --restart", execArgs{Positional: []string{`binaries={x=/a},restart=always`}, Restart: "no"},
			"--restart and restart= in the spec string both set the restart policy; use one"},
		{"bad --require", execArgs{Positional: []string{"/bin/true"}, Require: []string{"mem=10"}},
			`--require: "mem=10" is not a comparison ATTR OP NUMBER (OP one of > >= < <= == !=), e.g. mem>10`},
		{"--require on an option", execArgs{Positional: []string{"/bin/true"}, Require: []string{"min>2"}},
			`--require: option min>: min is an option, not a machine attribute (write min=...)`},
		{"repeated --require", execArgs{Positional: []string{"/bin/true"}, Require: []string{"mem>2", "mem>3"}},
			`option mem>: given twice`},
		{"bad --time", execArgs{Positional: []string{"/bin/true"}, Time: "1d"},
			`--time: time limit: "1d" is not a whole number from 1, with an optional unit s, m or h, up to a year`},
		{"uncatchable --signal", execArgs{Positional: []string{"/bin/true"}, Signal: "KILL@10"},
			`--signal: signal "KILL": not a signal a job can be warned with (HUP, INT, QUIT, ABRT, USR1, USR2, ALRM, TERM, URG, XCPU, VTALRM, PROF, WINCH, PWR or their numbers)`},
		{"--signal lead past --time", execArgs{Positional: []string{"/bin/true"}, Time: "60s", Signal: "USR1@60"},
			`option signal: the warning 60s before the time limit comes before the job starts (time=1m)`},
		{"time and --time", execArgs{Positional: []string{`binaries={x=/a},time=5`}, Time: "6"},
			"--time and time= in the spec string both set the time limit; use one"},
		{"zero --max-per-machine", execArgs{Positional: []string{"/bin/true"}, MaxPerMachineSet: true},
			"--max-per-machine must be at least 1, got 0"},
		{"--unique and --max-per-machine", execArgs{Positional: []string{"/bin/true"}, Unique: true, MaxPerMachine: 2, MaxPerMachineSet: true},
			"option max_per_machine: conflicts with unique (unique means at most 1 instance per machine)"},
		{"spec unique and --max-per-machine", execArgs{Positional: []string{`binaries={x=/a},unique`}, MaxPerMachine: 2, MaxPerMachineSet: true},
			"option max_per_machine: conflicts with unique (unique means at most 1 instance per machine)"},
		{"negative --load", execArgs{Positional: []string{"/bin/true"}, Load: -1, LoadSet: true},
			"--load must be a positive number, got -1"},
		{"zero --memory", execArgs{Positional: []string{"/bin/true"}, MemorySet: true},
			"--memory must be at least 1 (MB), got 0"},
		{"bad --restart", execArgs{Positional: []string{"/bin/true"}, Restart: "sometimes"},
			`option restart: "sometimes" is not a restart policy (no, on-failure or always)`},
		{"--max-restarts without --restart", execArgs{Positional: []string{"/bin/true"}, MaxRestarts: 2, MaxRestartsSet: true},
			"option max_restarts: needs restart=on-failure or restart=always"},
		{"zero --max-restarts", execArgs{Positional: []string{"/bin/true"}, Restart: "always", MaxRestartsSet: true},
			"--max-restarts must be at least 1, got 0"},
		{"relative --mounts", execArgs{Positional: []string{"/bin/true"}, Mounts: []string{"data"}},
			`option mounts: "data" is not an absolute path`},
		{"bad --queue", execArgs{Positional: []string{"/bin/true"}, Queue: "a b"},
			`option queue: "a b" is not a queue name (letters, digits and _-.+)`},
		{"bad --after", execArgs{Positional: []string{"/bin/true"}, After: []string{"-1"}},
			`option after: "-1" is neither a job id nor a job name`},
		{"--afterok naming a job twice", execArgs{Positional: []string{"/bin/true"}, AfterOK: []string{"a,a"}},
			`option afterok: job a given twice`},
		{"NUL in argument", execArgs{Positional: []string{"/bin/echo", "a\x00b"}},
			`option args: "a\x00b" contains a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildSpec(tt.in)
			if err == nil {
				t.Fatalf("buildSpec() = nil error, want %q", tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("buildSpec() error = %q, want %q", got, tt.want)
			}
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("buildSpec() error is %T, want a usage error", err)
			}
		})
	}
}

func TestWriteOutcomes(t *testing.T) {
	job := client.Job{ID: 4, Instances: []client.Instance{
		{Index: 3, State: client.InstanceFailed, Machine: "stub1", Error: "exec: fork/exec /nope: no such file or directory"},
		{Index: 1, State: client.InstanceFailed, Machine: "stub2", ExitCode: 3},
		{Index: 0, State: client.InstanceExited, Machine: "stub1"},
		{Index: 2, State: client.InstanceRunning, Machine: "stub2", PID: 4242},
		{Index: 4, State: client.InstanceSignaled, Machine: "stub1", Signal: "SEGV"},
		{Index: 5, State: client.InstanceKilled, Machine: "stub2", Signal: "TERM"},
		{Index: 6, State: client.InstanceKilled},
		{Index: 7, State: client.InstanceLost, Machine: "stub3"},
		{Index: 8, State: client.InstanceQueued},
	}}
	var b bytes.Buffer
	bad := writeOutcomes(&b, job)
	want := `instance 0: exited 0 on stub1
instance 1: failed exit 3 on stub2
instance 2: running on stub2 pid 4242
instance 3: failed on stub1: exec: fork/exec /nope: no such file or directory
instance 4: signaled SEGV on stub1
instance 5: killed (TERM) on stub2
instance 6: killed
instance 7: lost on stub3
instance 8: queued
`
	if got := b.String(); got != want {
		t.Errorf("writeOutcomes() wrote\n%s\nwant\n%s", got, want)
	}
	if got, want := bad, 6; got != want {
		t.Errorf("writeOutcomes() = %d instances not exited 0, want %d", got, want)
	}
}

// TestStageCopyInRewritesLocalNames: --copy-binary with the
// per-architecture binaries={} form sends every local binary, and the
// binaries and arguments naming copy_in files become their places in the
// exec dir.
func TestStageCopyInRewritesLocalNames(t *testing.T) {
	cwd := t.TempDir()
	for _, name := range []string{"sim-amd64", "sim-arm64", "in.dat"} {
		if err := os.WriteFile(filepath.Join(cwd, name), []byte(name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	js, err := buildSpec(execArgs{Positional: []string{"binaries={x86_64=./sim-amd64,aarch64=./sim-arm64},args={./in.dat,-v}"}, CopyIn: []string{"in.dat"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := addCopyBinaries(&js); err != nil {
		t.Fatal(err)
	}
	if err := resolvePaths(&js, "", cwd, pathExists); err != nil {
		t.Fatal(err)
	}
	data, err := stageCopyIn(&js, cwd)
	if err != nil || data == nil {
		t.Fatalf("stage: %v", err)
	}
	want := map[string]string{"x86_64": "./sim-amd64", "aarch64": "./sim-arm64"}
	if !maps.Equal(js.Binaries, want) || !slices.Equal(js.Args, []string{"./in.dat", "-v"}) {
		t.Errorf("binaries %v args %v, want %v and [./in.dat -v]", js.Binaries, js.Args, want)
	}
	if !slices.Equal(js.CopyIn, []string{"in.dat", "sim-arm64", "sim-amd64"}) || js.CopyInBlob == "" || js.CopyInSize != int64(len(data)) {
		t.Errorf("copy_in %v blob %q size %d", js.CopyIn, js.CopyInBlob, js.CopyInSize)
	}
}

// TestBatchRefusesFiles: a --batch line may not send files, and says to
// submit such a job alone.
func TestBatchRefusesFiles(t *testing.T) {
	for _, line := range []string{"--copy-in in.dat /bin/true", "--copy-binary /bin/true"} {
		_, err := parseBatchLine(line, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "not taken in a --batch file") {
			t.Errorf("%q: %v, want a refusal that says to submit it alone", line, err)
		}
	}
}
