package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
		{"netexec env", map[string]string{envAddr: "http://127.0.0.1:1", envRetryFor: "200ms"}, []string{"netexec", "/bin/true"}, "netexec: submit job: "},
		{"netmgr kill", map[string]string{envRetryFor: "200ms"}, []string{"netmgr", "kill", "--addr", "http://127.0.0.1:1", "job1"}, "netmgr kill: kill job job1: "},
		{"netstatus -m", map[string]string{envRetryFor: "200ms"}, []string{"/usr/local/bin/netstatus", "-m", "--addr", "http://127.0.0.1:1"}, "netstatus: list machines: "},
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

// TestNoCredentials: a command with nothing to prove who runs it (no
// token, no client certificate, no stub socket, an https address) says
// how to get in rather than trying.
func TestNoCredentials(t *testing.T) {
	t.Setenv(envToken, "")
	t.Setenv("HOME", t.TempDir())
	if _, err := os.Stat(defaultSocket); err == nil {
		t.Skipf("this machine runs a stub (%s exists); the test needs a machine without one", defaultSocket)
	}
	code, _, stderr := runCLI(t, "netstatus", "--addr", "127.0.0.1:1")
	if code != exitError || !strings.Contains(stderr, "netstatus: no way to prove who you are") || !strings.Contains(stderr, envToken) {
		t.Fatalf("exit %d, stderr %q; want 1 and how to get in", code, stderr)
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
		{"mail type alone", []string{"netexec", "--mail-type", "end", "/bin/true"}, exitUsage, "netexec: option mail_type: needs mail or mail=ADDRESS"},
		{"server smtp and sendmail", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--smtp", "h:25", "--sendmail", "/usr/sbin/sendmail", "--mail-from", "a@b.c"},
			exitUsage, "netmgr server: --smtp and --sendmail exclude each other"},
		{"server smtp without from", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--smtp", "h:25"},
			exitUsage, "netmgr server: --mail-from ADDRESS is required with --smtp or --sendmail"},
		{"server mail-from alone", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--mail-from", "a@b.c"},
			exitUsage, "netmgr server: --mail-from needs --smtp or --sendmail"},
		{"server user without password", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--smtp", "h:25", "--mail-from", "a@b.c", "--smtp-user", "u"},
			exitUsage, "netmgr server: --smtp-user and --smtp-password-file go together"},
		{"server bad starttls", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--smtp", "h:25", "--mail-from", "a@b.c", "--smtp-starttls", "maybe"},
			exitUsage, `netmgr server: mail configuration: STARTTLS policy "maybe"`},
		{"kill without job", []string{"netkill"}, exitUsage, "netkill: missing JOB or ID"},
		{"kill flag after --", []string{"netkill", "--", "job1", "--signal", "KILL"}, exitUsage, `netkill: options go before JOB|ID, got "--signal" after it`},
		{"kill bad signal", []string{"netkill", "--signal", "NOPE", "job1"}, exitUsage, `netkill: --signal: unknown signal "NOPE"`},
		{"status two views", []string{"netstatus", "-j", "-m"}, exitUsage, "netstatus: give only one of -j, -m, -s, -q, -r, --licenses, --why and a JOB"},
		{"status queues and reservations", []string{"netstatus", "-q", "-r"}, exitUsage, "netstatus: give only one of -j, -m, -s, -q, -r, --licenses, --why and a JOB"},
		{"status two jobs", []string{"netstatus", "job1", "job2"}, exitUsage, `netstatus: unexpected argument "job2"`},
		{"reserve nothing", []string{"reserve"}, exitUsage, "reserve: missing MACHINE... or -n N"},
		{"reserve machines and -n", []string{"reserve", "-n", "2", "flute"}, exitUsage, "reserve: give MACHINE... or -n N, not both"},
		{"reserve -n zero", []string{"reserve", "-n", "0"}, exitUsage, "reserve: -n must be a positive number of machines, got 0"},
		{"reserve require without -n", []string{"netmgr", "reserve", "--require", "keys={a}", "flute"}, exitUsage, "netmgr reserve: --require goes with -n N"},
		{"reserve flag after --", []string{"reserve", "--", "flute", "--for", "2h"}, exitUsage, `reserve: options go before MACHINE, got "--for" after it`},
		{"reserve machine twice", []string{"reserve", "flute", "flute"}, exitUsage, "reserve: machine flute named twice"},
		{"reserve require binaries", []string{"reserve", "-n", "1", "--require", "binaries={x=/a},mem>10"}, exitUsage,
			"reserve: --require: binaries is not a requirement; give only keys, comparisons such as mem>10, mounts and machines"},
		{"reserve require min", []string{"reserve", "-n", "1", "--require", "keys={fpu},min=3"}, exitUsage, "reserve: --require: min is not a requirement"},
		{"reserve require args", []string{"reserve", "-n", "1", "--require", "args={x}"}, exitUsage, "reserve: --require: args is not a requirement"},
		{"reserve require env", []string{"reserve", "-n", "1", "--require", `env={"A=b"}`}, exitUsage, "reserve: --require: env is not a requirement"},
		{"reserve require queue", []string{"reserve", "-n", "1", "--require", "mem>1,queue=q"}, exitUsage, "reserve: --require: queue is not a requirement"},
		{"reserve require syntax", []string{"reserve", "-n", "1", "--require", "keys={fpu},mem=10"}, exitUsage, "reserve: --require: spec:1:12: unknown option mem"},
		{"reserve require empty", []string{"reserve", "-n", "1", "--require", " "}, exitUsage, "reserve: --require: empty SPEC"},
		{"reserve bad from", []string{"reserve", "--from", "teatime", "flute"}, exitUsage, `reserve: --from: "teatime" is not a time`},
		{"reserve past from", []string{"reserve", "--from", "2001-01-01T00:00:00Z", "flute"}, exitUsage, "reserve: --from: 2001-01-01T00:00:00Z is in the past"},
		{"reserve zero for", []string{"reserve", "--for", "0s", "flute"}, exitUsage, "reserve: --for must be a positive duration, got 0s"},
		{"reserve bad for", []string{"reserve", "--for", "soon", "flute"}, exitUsage, `reserve: invalid value "soon" for flag -for`},
		{"unreserve flag after --", []string{"netmgr", "unreserve", "--", "flute", "--id", "3"}, exitUsage, `netmgr unreserve: options go before MACHINE, got "--id" after it`},
		{"unreserve id zero", []string{"unreserve", "--id", "0"}, exitUsage, "unreserve: --id must be a reservation id, 1 or more"},
		{"suspend without job", []string{"netmgr", "suspend"}, exitUsage, "netmgr suspend: missing JOB or ID"},
		{"resume flag after --", []string{"netmgr", "resume", "--", "job1", "--addr", "x"}, exitUsage, `netmgr resume: options go before JOB|ID, got "--addr" after it`},
		{"restart without job", []string{"netmgr", "restart"}, exitUsage, "netmgr restart: missing JOB or ID"},
		{"queue without command", []string{"netmgr", "admin", "queue"}, exitUsage, "netmgr admin: no queue command given (add, set or remove)"},
		{"queue unknown command", []string{"netmgr", "admin", "queue", "drop", "q"}, exitUsage, `netmgr admin: unknown queue command "drop" (add, set or remove)`},
		{"queue add without name", []string{"netmgr", "admin", "queue", "add"}, exitUsage, "netmgr admin: missing queue NAME"},
		{"queue add flag after --", []string{"netmgr", "admin", "queue", "add", "--", "q", "--priority", "3"}, exitUsage, `netmgr admin: options go before NAME, got "--priority" after it`},
		{"queue add two names", []string{"netmgr", "admin", "queue", "add", "q", "--priority", "3", "r"}, exitUsage, `netmgr admin: one queue NAME at a time, got ["r"] after it`},
		{"queue set missing value", []string{"netmgr", "admin", "queue", "set", "q", "--priority"}, exitUsage, `netmgr admin: invalid value "q" for flag -priority`},
		{"queue add negative size", []string{"netmgr", "admin", "queue", "add", "--max-size", "-1", "q"}, exitUsage, "netmgr admin: --max-size must not be negative, got -1; 0 means no limit"},
		{"queue add bad max run", []string{"netmgr", "admin", "queue", "add", "--max-run", "2 hours", "q"}, exitUsage, `netmgr admin: --max-run: "2 hours" is neither whole minutes (200) nor a duration (90s, 30m, 2h)`},
		{"queue set fractional max run", []string{"netmgr", "admin", "queue", "set", "--max-run", "1500ms", "q"}, exitUsage, "netmgr admin: --max-run: 1500ms is not a whole number of seconds"},
		{"queue set negative max run", []string{"netmgr", "admin", "queue", "set", "--max-run", "-5", "q"}, exitUsage, "netmgr admin: --max-run: -5 minutes is out of range"},
		{"queue set bad flag", []string{"netmgr", "admin", "queue", "set", "--bogus", "q"}, exitUsage, "netmgr admin: flag provided but not defined: -bogus"},
		{"queue remove default", []string{"netmgr", "admin", "queue", "remove", "default"}, exitError, "netmgr admin: remove queue default: the default queue always exists"},
		{"agent without dev", []string{"netmgr", "agent"}, exitUsage, "netmgr agent: only --dev exists today"},
		{"server without name", []string{"netmgr", "server", "--data-dir", "/nonexistent"}, exitUsage, "netmgr server: --name is required"},
		{"server bad log level", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--log-level", "loud"}, exitUsage, `netmgr server: --log-level must be debug, info, warn or error, got "loud"`},
		{"stub without join", []string{"netmgr", "stub", "--data-dir", "/nonexistent"}, exitUsage, "netmgr stub: --join is required"},
		{"server without TLS", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent"}, exitUsage, "netmgr server: no TLS material: give --ca-file, --cert-file and --key-file"},
		{"stub without TLS", []string{"netmgr", "stub", "--data-dir", "/nonexistent", "--join", "127.0.0.1:1"}, exitUsage, "netmgr stub: no TLS material"},
		{"stub with a negative load", []string{"netmgr", "stub", "--data-dir", "/nonexistent", "--join", "127.0.0.1:1", "--sleep-on-load", "-1"}, exitUsage, "netmgr stub: sleep on load -1: bad owner policy setting"},
		{"stub with a bad window", []string{"netmgr", "stub", "--data-dir", "/nonexistent", "--join", "127.0.0.1:1", "--available", "Mon-Fri 18:00-25:00"}, exitUsage, `netmgr stub: window "Mon-Fri 18:00-25:00": time range "18:00-25:00": want HH:MM-HH:MM: bad owner policy setting`},
		{"stub with a negative vacate", []string{"netmgr", "stub", "--data-dir", "/nonexistent", "--join", "127.0.0.1:1", "--vacate-after", "-1s"}, exitUsage, "netmgr stub: --vacate-after must not be negative, got -1s"},
		{"insecure and TLS", []string{"netmgr", "server", "--name", "s", "--data-dir", "/nonexistent", "--insecure", "--ca-file", "x"}, exitUsage, "netmgr server: --insecure and --ca-file/--cert-file/--key-file contradict"},
		{"negative retry", []string{"netstatus", "--retry-for", "-1s"}, exitUsage, "netstatus: --retry-for must not be negative, got -1s"},
		{"status why and -m", []string{"netstatus", "-m", "--why", "job1"}, exitUsage, "netstatus: give only one of -j, -m, -s, -q, -r, --licenses, --why and a JOB"},
		{"status why empty", []string{"netstatus", "--why", ""}, exitUsage, "netstatus: --why needs a job name or id"},
		{"exec bad --require", []string{"netexec", "--require", "mem=10", "/bin/true"}, exitUsage, `netexec: --require: "mem=10" is not a comparison`},
		{"exec --keys conflict", []string{"netexec", "--keys", "fpu", "binaries={x=/a},keys={fpu}"}, exitUsage, "netexec: --keys and keys= in the spec string both set the required keys; use one"},
		{"exec bad --load", []string{"netexec", "--load", "x", "/bin/true"}, exitUsage, `netexec: invalid value "x" for flag -load`},
		{"exec spec attribute assigned", []string{"netexec", "binaries={sparc=/t},mem=10"}, exitUsage, "netexec: spec:1:21: unknown option mem (to compare a machine attribute write mem==10 or mem>=10)"},
		{"admin without command", []string{"netmgr", "admin"}, exitUsage, "netmgr admin: no admin command given (load, show, queue or policy)"},
		{"admin unknown command", []string{"netmgr", "admin", "frob"}, exitUsage, `netmgr admin: unknown admin command "frob" (load, show, queue or policy)`},
		{"admin load without file", []string{"netmgr", "admin", "load"}, exitUsage, "netmgr admin: missing FILE"},
		{"admin load two files", []string{"netmgr", "admin", "load", "a", "b"}, exitUsage, `netmgr admin: admin load takes one FILE, got ["b"] after it`},
		{"admin load flag after --", []string{"netmgr", "admin", "load", "--", "a", "--addr", "x"}, exitUsage, `netmgr admin: options go before FILE, got "--addr" after it`},
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

func TestFlagsFirst(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"queue name first", "netmgr admin queue add Q --priority 5 --max-run=90s", "netmgr admin queue add --priority 5 --max-run=90s Q"},
		{"queue name between", "netmgr admin queue set --max-mem 20 Q --max-size 3", "netmgr admin queue set --max-mem 20 --max-size 3 Q"},
		{"queue name last", "netmgr admin queue remove --addr x Q", "netmgr admin queue remove --addr x Q"},
		{"help after name", "netmgr admin queue add Q -h", "netmgr admin queue add -h Q"},
		{"double dash", "netmgr admin queue add Q -- --priority", "netmgr admin queue add Q -- --priority"},
		{"negative value", "netmgr admin queue set Q --priority -1", "netmgr admin queue set --priority -1 Q"},
		{"value missing", "netmgr admin queue set Q --priority", "netmgr admin queue set --priority Q"},
		{"reserve link", "/usr/bin/reserve flute viola --for 2h -n=1", "/usr/bin/reserve --for 2h -n=1 flute viola"},
		{"netmgr unreserve", "netmgr unreserve flute --id 3", "netmgr unreserve --id 3 flute"},
		{"netmgr under another name", "./nm reserve flute -n 1", "./nm reserve -n 1 flute"},
		{"netstatus job then json", "netstatus keep --json", "netstatus --json keep"},
		{"netstatus job named reserve", "netstatus reserve -m", "netstatus -m reserve"},
		{"netstatus why after", "/usr/bin/netstatus --json --why keep", "/usr/bin/netstatus --json --why keep"},
		{"netmgr status job then json", "netmgr status keep --json --addr x", "netmgr status --json --addr x keep"},
		{"netexec untouched", "netexec /bin/sh -c x", "netexec /bin/sh -c x"},
		{"netexec job's json", "netexec /bin/echo --json", "netexec /bin/echo --json"},
		{"netmgr exec untouched", "netmgr exec /bin/ls -l --addr x", "netmgr exec /bin/ls -l --addr x"},
		{"kill options after", "netmgr kill job1 --signal INT", "netmgr kill --signal INT job1"},
		{"netkill bool then job", "netkill job1 --all job2", "netkill --all job1 job2"},
		{"admin load options after", "netmgr admin load f --addr x", "netmgr admin load --addr x f"},
		{"history json after", "netmgr history backup --json", "netmgr history --json backup"},
		{"completion request stays last", "netstatus keep --generate-bash-completion", "netstatus keep --generate-bash-completion"},
		{"unknown option has no value", "netstatus keep --bogus", "netstatus --bogus keep"},
		{"unknown queue verb untouched", "netmgr admin queue frob Q --priority 1", "netmgr admin queue frob Q --priority 1"},
		{"netmgr flag only", "netmgr --version", "netmgr --version"},
		{"unknown command", "netmgr frob x --y", "netmgr frob x --y"},
		{"netmgr alone", "netmgr", "netmgr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := strings.Fields(tt.in)
			app, _ := newApp(filepath.Base(args[0]), args[1:])
			if got := strings.Join(flagsFirst(app, args), " "); got != tt.want {
				t.Errorf("flagsFirst(%q) = %q, want %q", tt.in, got, tt.want)
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
			"--queue", "--restart", "--max-restarts", "--mail", "--mail-to", "--mail-type", "mail_type={begin,end}", "--cron", "--after", "--copy-in", "--copy-out",
			"--catchup", "--overlap", "NETMGR_SCHEDULED_TIME", "netexec --name backup --cron '0 3 * * *' /usr/local/bin/backup", "catchup=none",
		}},
		{[]string{"netmgr", "exec", "--help"}, []string{"netexec -n 3", "--instances"}},
		{[]string{"netkill", "--help"}, []string{"netkill job1", "--signal", "netkill --runs backup", "--runs"}},
		{[]string{"netstatus", "-h"}, []string{"netstatus -m", "JOB NAME", "--json", "--why JOB", "MTYPE", "RATING", "draining",
			"netstatus -q", "MAXACTIVE", "netstatus -r", "RESERVED", "tclark until 16:00", "killed(timeout)", "suspended"}},
		{[]string{"netmgr", "admin", "--help"}, []string{"netmgr admin load", "netmgr admin show", "mtype sparc1+", "netmgr admin queue add"}},
		{[]string{"netmgr", "admin", "queue", "--help"}, []string{"netmgr admin queue add NEW_Q --max-size 120", "netmgr admin queue set NEW_Q", "netmgr admin queue remove NEW_Q"}},
		{[]string{"netmgr", "admin", "queue", "add", "--help"}, []string{"$ netmgr admin queue add NEW_Q", "queue NEW_Q added:", "--max-run", "--max-mem", "--priority", "SIGKILL 10 s later"}},
		{[]string{"netmgr", "admin", "queue", "set", "--help"}, []string{"$ netmgr admin queue set NEW_Q --priority 5", "--max-active"}},
		{[]string{"netmgr", "admin", "queue", "remove", "--help"}, []string{"$ netmgr admin queue remove NEW_Q", "queue NEW_Q removed"}},
		{[]string{"netmgr", "suspend", "--help"}, []string{"$ netmgr suspend job4", "job 4: 3 instances suspended", "SIGSTOP"}},
		{[]string{"netmgr", "resume", "--help"}, []string{"$ netmgr resume job4", "job 4: 3 instances resumed", "SIGCONT"}},
		{[]string{"netmgr", "restart", "--help"}, []string{"$ netmgr restart job4", "job 4: 3 instances restarted"}},
		{[]string{"netmgr", "--help"}, []string{"suspend", "resume", "restart", "reserve", "unreserve"}},
		{[]string{"netmgr", "admin", "load", "--help"}, []string{"FILE:LINE:COL", "draining", "--addr"}},
		{[]string{"netmgr", "admin", "show", "--help"}, []string{"admin show", "--addr"}},
		{[]string{"reserve", "--help"}, []string{"reserve flute viola", "reserve -n 2 --require 'keys={mathlab},mem>10' --from 14:00 --for 2h",
			"reservation 3: flute, viola for root from 14:00 until 16:00", "--from", "--for", "+30m", "RFC 3339"}},
		{[]string{"unreserve", "--help"}, []string{"$ unreserve flute", "ended reservation 3", "--id"}},
		{[]string{"netmgr", "server", "--help"}, []string{"netmgr server --name s1", "--bootstrap-expect", "--log-level", "--database FILE", "whole group was down"}},
		{[]string{"netmgr", "stub", "--help"}, []string{"netmgr stub --name flute", "--exec-dir", "--init FILE", "mtype=sparc1+", "sees no server"}},
		{[]string{"netmgr", "agent", "--help"}, []string{"netmgr agent --dev", "export NETMGR_ADDR="}},
		{[]string{"netmgr", "share", "--help"}, []string{"ACCOUNT  USER   SHARE  USAGE  FACTOR  RUNNING  WAITING", "account physics = {share=10, users={alice, bob}}",
			"share alice = 2", "fairshare_halflife = 7d", "--json", "slot-seconds"}},
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

	controls     []string           // "suspend job1" per job-control call
	queues       []client.Queue     // returned by GET /v1/queues
	setQueues    []client.Queue     // bodies of PUT /v1/queues/{name}
	removed      []string           // names of DELETE /v1/queues/{name}
	reservation  client.Reservation // returned by POST /v1/reservations
	reserves     []client.ReserveRequest
	ended        []client.Reservation // returned by POST /v1/reservations/end
	unreserves   []client.UnreserveRequest
	reservations []client.Reservation // returned by GET /v1/reservations

	history        []client.HistoryAttempt // returned by GET /v1/history, whatever the query
	historyQueries []string                // the raw query of each GET /v1/history
}

// notFound answers 404 with the API's error body.
func notFound(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: msg})
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
	for _, action := range []string{"suspend", "resume", "restart"} {
		mux.HandleFunc("POST /v1/jobs/{ref}/"+action, func(w http.ResponseWriter, r *http.Request) {
			ref := r.PathValue("ref")
			if ref == "missing" {
				notFound(w, "job missing not found")
				return
			}
			f.controls = append(f.controls, action+" "+ref)
			_ = json.NewEncoder(w).Encode(client.ControlResponse{ID: f.job.ID, Affected: 3})
		})
	}
	mux.HandleFunc("GET /v1/queues", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(f.queues)
	})
	mux.HandleFunc("PUT /v1/queues/{name}", func(w http.ResponseWriter, r *http.Request) {
		var q client.Queue
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil || q.Name != r.PathValue("name") {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		f.setQueues = append(f.setQueues, q)
		_ = json.NewEncoder(w).Encode(q)
	})
	mux.HandleFunc("DELETE /v1/queues/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if name == "missing" {
			notFound(w, "queue missing not found")
			return
		}
		f.removed = append(f.removed, name)
	})
	mux.HandleFunc("POST /v1/reservations", func(w http.ResponseWriter, r *http.Request) {
		var req client.ReserveRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		f.reserves = append(f.reserves, req)
		_ = json.NewEncoder(w).Encode(f.reservation)
	})
	mux.HandleFunc("POST /v1/reservations/end", func(w http.ResponseWriter, r *http.Request) {
		var req client.UnreserveRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		f.unreserves = append(f.unreserves, req)
		if len(f.ended) == 0 { // as the server answers
			notFound(w, "unreserve: root holds no matching reservation")
			return
		}
		_ = json.NewEncoder(w).Encode(client.UnreserveResponse{Ended: f.ended})
	})
	mux.HandleFunc("GET /v1/reservations", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(f.reservations)
	})
	mux.HandleFunc("GET /v1/history", func(w http.ResponseWriter, r *http.Request) {
		f.historyQueries = append(f.historyQueries, r.URL.RawQuery)
		_ = json.NewEncoder(w).Encode(f.history)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestExecAgainstFakeServer(t *testing.T) {
	unsetExported(t)
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
			name:       "the job's own options after BINARY",
			job:        ok,
			args:       []string{"netexec", "/bin/echo", "--json", "-n", "2"},
			stdout:     "job job1.alice id 7 submitted\n",
			wantSubmit: client.JobSpec{Binaries: map[string]string{"*": "/bin/echo"}, Args: []string{"--json", "-n", "2"}},
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
		{Index: 0, Attempt: 1, State: client.InstanceRunning, Machine: "stub1", Binary: "/bin/sh", PID: 9},
	}}}
	t.Setenv(envAddr, f.start(t))
	code, stdout, stderr := runCLI(t, "netmgr", "status")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	want := "ID  JOB NAME    INST  ATTEMPT  BINARY NAME  WHERE  SUBMITTED  STARTED  ELAPSED  STATE\n" +
		"7   job1.alice  0     1        /bin/sh      stub1  -          -        -        running\n"
	if stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
	}

	// netstatus JOB [--json], as its usage line writes it: the option
	// after the argument.
	for _, args := range [][]string{{"netstatus", "job1", "--json"}, {"netmgr", "status", "job1", "--json"}} {
		code, stdout, stderr = runCLI(t, args...)
		if code != exitOK {
			t.Fatalf("%q: exit code = %d, want %d; stderr:\n%s", args, code, exitOK, stderr)
		}
		var j client.Job
		if err := json.Unmarshal([]byte(stdout), &j); err != nil || j.ID != 7 {
			t.Errorf("%q: stdout %q is not job 7 as JSON (%v)", args, stdout, err)
		}
	}
}
