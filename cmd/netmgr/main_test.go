package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// runCLI runs the command line and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUnreachableAddr(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		prefix string
	}{
		{"netstatus flag", nil, []string{"netstatus", "--addr", "http://127.0.0.1:1", "--retry-for", "200ms"}, "netstatus: list jobs: "},
		{"netexec env", map[string]string{envAddr: "127.0.0.1:1", envRetryFor: "200ms"}, []string{"netexec", "/bin/true"}, "netexec: submit job: "},
		{"netmgr kill", map[string]string{envRetryFor: "200ms"}, []string{"netmgr", "kill", "--addr", "127.0.0.1:1", "job1"}, "netmgr kill: kill job job1: "},
		{"netstatus -m", map[string]string{envRetryFor: "200ms"}, []string{"/usr/local/bin/netstatus", "-m", "--addr", "127.0.0.1:1"}, "netstatus: list machines: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, _, stderr := runCLI(t, tt.args...)
			if got, want := code, exitError; got != want {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", got, want, stderr)
			}
			if !strings.HasPrefix(stderr, tt.prefix) {
				t.Errorf("stderr = %q, want prefix %q", stderr, tt.prefix)
			}
			if !strings.Contains(stderr, "tried http://127.0.0.1:1") {
				t.Errorf("stderr = %q, want it to name the address tried", stderr)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string // expected start of stderr
	}{
		{"netmgr without command", []string{"netmgr"}, exitUsage, "netmgr: no command given"},
		{"unknown command", []string{"netmgr", "frobnicate"}, exitUsage, `netmgr: unknown command "frobnicate"`},
		{"unknown flag", []string{"netexec", "--bogus", "/bin/true"}, exitUsage, "netexec: flag provided but not defined: -bogus"},
		{"missing flag value", []string{"netmgr", "exec", "-n"}, exitUsage, "netmgr exec: flag needs an argument: -n"},
		{"bad -n value", []string{"netexec", "-n", "x", "/bin/true"}, exitUsage, `netexec: invalid value "x" for flag -n`},
		{"no binary", []string{"netexec"}, exitUsage, "netexec: missing BINARY or job spec string"},
		{"bad wait", []string{"netexec", "--wait", "soon", "/bin/true"}, exitUsage, `netexec: --wait must be "started" or "done", got "soon"`},
		{"malformed spec", []string{"netexec", "binaries={x86_64=/bin/sh},min=x"}, exitUsage, `netexec: spec:1:31: option min: "x" is not a positive integer`},
		{"flag conflict", []string{"netexec", "--name", "a", "binaries={x=/bin/sh},symb_name=b"}, exitUsage, "netexec: --name and symb_name= in the spec string both set the job name; use one"},
		{"kill without job", []string{"netkill"}, exitUsage, "netkill: missing JOB or ID"},
		{"kill flag after job", []string{"netkill", "job1", "--signal", "KILL"}, exitUsage, `netkill: options go before JOB|ID, got "--signal" after it`},
		{"kill bad signal", []string{"netkill", "--signal", "NOPE", "job1"}, exitUsage, `netkill: --signal: unknown signal "NOPE"`},
		{"status two views", []string{"netstatus", "-j", "-m"}, exitUsage, "netstatus: give only one of -j, -m, -s and --why"},
		{"status argument", []string{"netstatus", "job1"}, exitUsage, `netstatus: unexpected argument "job1"`},
		{"reserve", []string{"reserve", "flute"}, exitError, "reserve: not implemented yet (see the reservations issue)"},
		{"unreserve", []string{"netmgr", "unreserve", "flute"}, exitError, "netmgr unreserve: not implemented yet (see the reservations issue)"},
		{"agent without dev", []string{"netmgr", "agent"}, exitUsage, "netmgr agent: only --dev exists today"},
		{"server without name", []string{"netmgr", "server", "--data-dir", "/nonexistent"}, exitUsage, "netmgr server: --name is required"},
		{"server bad log level", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--log-level", "loud"}, exitUsage, `netmgr server: --log-level must be debug, info, warn or error, got "loud"`},
		{"stub without join", []string{"netmgr", "stub", "--data-dir", "/nonexistent"}, exitUsage, "netmgr stub: --join is required"},
		{"negative retry", []string{"netstatus", "--retry-for", "-1s"}, exitUsage, "netstatus: --retry-for must not be negative, got -1s"},
		{"status why and -m", []string{"netstatus", "-m", "--why", "job1"}, exitUsage, "netstatus: give only one of -j, -m, -s and --why"},
		{"status why empty", []string{"netstatus", "--why", ""}, exitUsage, "netstatus: --why needs a job name or id"},
		{"exec bad --require", []string{"netexec", "--require", "mem=10", "/bin/true"}, exitUsage, `netexec: --require: "mem=10" is not a comparison`},
		{"exec --keys conflict", []string{"netexec", "--keys", "fpu", "binaries={x=/a},keys={fpu}"}, exitUsage, "netexec: --keys and keys= in the spec string both set the required keys; use one"},
		{"exec bad --load", []string{"netexec", "--load", "x", "/bin/true"}, exitUsage, `netexec: invalid value "x" for flag -load`},
		{"exec spec attribute assigned", []string{"netexec", "binaries={sparc=/t},mem=10"}, exitUsage, "netexec: spec:1:21: unknown option mem (to compare a machine attribute write mem==10 or mem>=10)"},
		{"admin without command", []string{"netmgr", "admin"}, exitUsage, "netmgr admin: no admin command given (load or show)"},
		{"admin unknown command", []string{"netmgr", "admin", "frob"}, exitUsage, `netmgr admin: unknown admin command "frob" (load or show)`},
		{"admin load without file", []string{"netmgr", "admin", "load"}, exitUsage, "netmgr admin: missing FILE"},
		{"admin load two files", []string{"netmgr", "admin", "load", "a", "b"}, exitUsage, `netmgr admin: admin load takes one FILE, got ["b"] after it`},
		{"admin load flag after file", []string{"netmgr", "admin", "load", "a", "--addr", "x"}, exitUsage, `netmgr admin: options go before FILE, got "--addr" after it`},
		{"admin load missing file", []string{"netmgr", "admin", "load", "/nonexistent/isis.db"}, exitError, "netmgr admin: read database: open /nonexistent/isis.db: no such file or directory"},
		{"admin load bad flag", []string{"netmgr", "admin", "load", "--bogus", "a"}, exitUsage, "netmgr admin: flag provided but not defined: -bogus"},
		{"admin show argument", []string{"netmgr", "admin", "show", "x"}, exitUsage, `netmgr admin: unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envAddr, "http://127.0.0.1:1")
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.HasPrefix(stderr, tt.want) {
				t.Errorf("stderr =\n%s\nwant prefix\n%s", stderr, tt.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of the help text
	}{
		{[]string{"netmgr", "--help"}, []string{"netmgr agent --dev", "exec", "status", "server", "stub", "admin"}},
		{[]string{"netexec", "--help"}, []string{
			"netexec -n 3", "binaries={x86_64=/bin/sh}", "--wait", envAddr, envRetryFor, "OPTIONS:",
			"binaries={sparc=/usr/u/fred/test},min=3,mem>10,mail",
			"binaries={sparc=/usr/u/fred/sparc/test,mips=/usr/u/fred/mips/test},min=4,args={4},mounts={/usr/u/fred/data},symb_name=test1",
			"--keys", "--require", "--mounts", "--machines", "--unique", "--max-per-machine", "--load", "--memory",
			"--queue", "--restart", "--max-restarts", "--mail", "--mail-to", "--cron", "--after", "--copy-in", "--copy-out",
		}},
		{[]string{"netmgr", "exec", "--help"}, []string{"netexec -n 3", "--instances"}},
		{[]string{"netkill", "--help"}, []string{"netkill job1", "--signal"}},
		{[]string{"netstatus", "-h"}, []string{"netstatus -m", "JOB NAME", "--json", "--why JOB", "MTYPE", "RATING", "draining"}},
		{[]string{"netmgr", "admin", "--help"}, []string{"netmgr admin load", "netmgr admin show", "mtype sparc1+"}},
		{[]string{"netmgr", "admin", "load", "--help"}, []string{"FILE:LINE:COL", "draining", "--addr"}},
		{[]string{"netmgr", "admin", "show", "--help"}, []string{"admin show", "--addr"}},
		{[]string{"reserve", "--help"}, []string{"reserve flute"}},
		{[]string{"unreserve", "--help"}, []string{"unreserve flute"}},
		{[]string{"netmgr", "server", "--help"}, []string{"netmgr server --name s1", "--bootstrap-expect", "--log-level", "--database FILE"}},
		{[]string{"netmgr", "stub", "--help"}, []string{"netmgr stub --name flute", "--exec-dir", "--init FILE", "mtype=sparc1+"}},
		{[]string{"netmgr", "agent", "--help"}, []string{"netmgr agent --dev", "export NETMGR_ADDR="}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("help does not mention %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// fakeServer answers the few API calls the job commands make, from canned
// data, and records what it was sent.
type fakeServer struct {
	job      client.Job // returned by GET /v1/jobs/{ref}
	submits  []client.SubmitRequest
	users    []string
	killRefs []string

	why      []client.WhyInstance  // returned by GET /v1/jobs/{ref}/why
	whyRefs  []string              // refs asked about
	machines []client.Machine      // returned by GET /v1/machines
	db       client.DatabaseText   // returned by GET /v1/admin/database
	loaded   []client.DatabaseText // bodies of POST /v1/admin/database
	loadResp client.LoadResponse   // its answer
}

func (f *fakeServer) start(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		var req client.SubmitRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		f.submits = append(f.submits, req)
		f.users = append(f.users, r.Header.Get(client.UserHeader))
		_ = json.NewEncoder(w).Encode(client.SubmitResponse{ID: f.job.ID, Name: f.job.Name, Owner: f.job.Owner})
	})
	mux.HandleFunc("GET /v1/jobs/{ref}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(f.job)
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode([]client.Job{f.job})
	})
	mux.HandleFunc("POST /v1/jobs/{ref}/kill", func(w http.ResponseWriter, r *http.Request) {
		ref := r.PathValue("ref")
		if ref == "missing" {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "job missing not found"})
			return
		}
		f.killRefs = append(f.killRefs, ref)
		_ = json.NewEncoder(w).Encode(client.KillResponse{ID: f.job.ID, Signaled: 1, Dequeued: 2})
	})
	mux.HandleFunc("GET /v1/jobs/{ref}/why", func(w http.ResponseWriter, r *http.Request) {
		f.whyRefs = append(f.whyRefs, r.PathValue("ref"))
		_ = json.NewEncoder(w).Encode(f.why)
	})
	mux.HandleFunc("GET /v1/machines", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(f.machines)
	})
	mux.HandleFunc("GET /v1/admin/database", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(f.db)
	})
	mux.HandleFunc("POST /v1/admin/database", func(w http.ResponseWriter, r *http.Request) {
		var db client.DatabaseText
		if err := json.NewDecoder(r.Body).Decode(&db); err != nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		f.loaded = append(f.loaded, db)
		_ = json.NewEncoder(w).Encode(f.loadResp)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestExecAgainstFakeServer(t *testing.T) {
	done := client.Job{ID: 7, Name: "job1", Owner: "alice", State: client.JobFailed, Instances: []client.Instance{
		{Index: 0, State: client.InstanceExited, Machine: "stub1"},
		{Index: 1, State: client.InstanceFailed, Machine: "stub2", ExitCode: 3},
	}}
	ok := client.Job{ID: 7, Name: "job1", Owner: "alice", State: client.JobDone, Instances: []client.Instance{
		{Index: 0, State: client.InstanceExited, Machine: "stub1"},
	}}
	running := client.Job{ID: 7, Name: "job1", Owner: "alice", State: client.JobRunning, Instances: []client.Instance{
		{Index: 0, State: client.InstanceRunning, Machine: "stub1", PID: 99},
		{Index: 1, State: client.InstanceRunning, Machine: "stub2", PID: 100},
	}}
	tests := []struct {
		name       string
		job        client.Job
		args       []string
		code       int
		stdout     string
		stderr     string
		wantSubmit client.JobSpec
	}{
		{
			name:       "submit",
			job:        ok,
			args:       []string{"netexec", "/bin/sh", "-c", "echo hi"},
			stdout:     "job job1.alice id 7 submitted\n",
			wantSubmit: client.JobSpec{Binaries: map[string]string{"*": "/bin/sh"}, Args: []string{"-c", "echo hi"}},
		},
		{
			name:       "double dash",
			job:        ok,
			args:       []string{"netexec", "-n", "2", "--env", "A=b,c", "--", "--weird-binary", "-x"},
			stdout:     "job job1.alice id 7 submitted\n",
			wantSubmit: client.JobSpec{Min: 2, Env: []string{"A=b,c"}, Binaries: map[string]string{"*": "--weird-binary"}, Args: []string{"-x"}},
		},
		{
			name:       "wait started",
			job:        running,
			args:       []string{"netmgr", "exec", "--wait", "started", "-n", "2", "/bin/sleep", "9"},
			stdout:     "job job1.alice id 7 submitted\ninstance 0: running on stub1 pid 99\ninstance 1: running on stub2 pid 100\n",
			wantSubmit: client.JobSpec{Min: 2, Binaries: map[string]string{"*": "/bin/sleep"}, Args: []string{"9"}},
		},
		{
			name:       "wait done with a failure",
			job:        done,
			args:       []string{"netexec", "--wait", "done", "binaries={x86_64=/bin/sh},min=2,symb_name=job1"},
			code:       exitError,
			stdout:     "job job1.alice id 7 submitted\ninstance 0: exited 0 on stub1\ninstance 1: failed exit 3 on stub2\n",
			stderr:     "netexec: 1 of 2 instances of job 7 did not exit 0\n",
			wantSubmit: client.JobSpec{Name: "job1", Min: 2, Binaries: map[string]string{"x86_64": "/bin/sh"}},
		},
		{
			name:       "wait done all well",
			job:        ok,
			args:       []string{"netexec", "--wait", "done", "/bin/true"},
			stdout:     "job job1.alice id 7 submitted\ninstance 0: exited 0 on stub1\n",
			wantSubmit: client.JobSpec{Binaries: map[string]string{"*": "/bin/true"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{job: tt.job}
			t.Setenv(envAddr, f.start(t))
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, tt.stdout)
			}
			if stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr, tt.stderr)
			}
			if len(f.submits) != 1 {
				t.Fatalf("got %d submits, want 1", len(f.submits))
			}
			got := f.submits[0]
			if gotSpec := got.Spec; !equalSpec(gotSpec, tt.wantSubmit) {
				t.Errorf("submitted spec = %#v, want %#v", gotSpec, tt.wantSubmit)
			}
			if got.IdempotencyKey == "" {
				t.Errorf("submit has no idempotency key")
			}
			if f.users[0] == "" {
				t.Errorf("submit carries no %s header", client.UserHeader)
			}
		})
	}
}

func equalSpec(a, b client.JobSpec) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestKillAgainstFakeServer(t *testing.T) {
	f := &fakeServer{job: client.Job{ID: 7}}
	t.Setenv(envAddr, f.start(t))
	code, stdout, stderr := runCLI(t, "netkill", "--signal", "sigint", "job1", "7")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	if want := "job 7: signalled 1 instance, dequeued 2\njob 7: signalled 1 instance, dequeued 2\n"; stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
	}
	if got, want := strings.Join(f.killRefs, " "), "job1 7"; got != want {
		t.Errorf("killed refs %q, want %q", got, want)
	}

	code, _, stderr = runCLI(t, "netkill", "missing")
	if code != exitError {
		t.Errorf("exit code = %d, want %d", code, exitError)
	}
	if want := "netkill: kill job missing: job missing not found\n"; stderr != want {
		t.Errorf("stderr = %q, want %q", stderr, want)
	}
}

func TestStatusAgainstFakeServer(t *testing.T) {
	f := &fakeServer{job: client.Job{ID: 7, Name: "job1", Owner: "alice", Instances: []client.Instance{
		{Index: 0, State: client.InstanceRunning, Machine: "stub1", Binary: "/bin/sh", PID: 9},
	}}}
	t.Setenv(envAddr, f.start(t))
	code, stdout, stderr := runCLI(t, "netmgr", "status")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	want := "ID  JOB NAME    BINARY NAME  WHERE  STATE\n7   job1.alice  /bin/sh      stub1  running\n"
	if stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
	}
}
