package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// goodDB is a small database in the paper's language.
const goodDB = `key fpu /* Has hardware fpu */
key sparc
mtype sparc1+ = {sparc, mem=16, rating=8.0}
machine flute = sparc1+
add_q NEW_Q = {nq_maxsize=120, \
               nq_maxmem=20}
admin_id tclark
`

// writeFile writes text to a file in a fresh directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAdminLoad(t *testing.T) {
	tests := []struct {
		name   string
		resp   client.LoadResponse
		stdout string
	}{
		{
			name:   "counts",
			resp:   client.LoadResponse{Index: 42, Keys: 2, MTypes: 1, Machines: 1, Queues: 1},
			stdout: "loaded FILE: 2 keys, 1 mtype, 1 machine, 1 queue (index 42)\n",
		},
		{
			name:   "draining",
			resp:   client.LoadResponse{Index: 7, Keys: 9, MTypes: 5, Machines: 3, Queues: 0, Draining: []string{"oboe", "tuba"}},
			stdout: "loaded FILE: 9 keys, 5 mtypes, 3 machines, 0 queues (index 7)\ndraining: oboe, tuba\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{loadResp: tt.resp}
			t.Setenv(envAddr, f.start(t))
			path := writeFile(t, "isis.db", goodDB)
			code, stdout, stderr := runCLI(t, "netmgr", "admin", "load", path)
			if code != exitOK {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			if want := strings.ReplaceAll(tt.stdout, "FILE", path); stdout != want {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
			}
			if len(f.loaded) != 1 {
				t.Fatalf("got %d loads, want 1", len(f.loaded))
			}
			if got, want := f.loaded[0], (client.DatabaseText{Filename: path, Text: goodDB}); got != want {
				t.Errorf("sent %+v, want %+v", got, want)
			}
		})
	}
}

func TestAdminLoadParseErrors(t *testing.T) {
	f := &fakeServer{}
	t.Setenv(envAddr, f.start(t))
	path := writeFile(t, "bad.db", "key fpu\nmtype m = {fpu, nokey}\nmachine x = nosuch\n")
	code, stdout, stderr := runCLI(t, "netmgr", "admin", "load", path)
	if code != exitError {
		t.Errorf("exit code = %d, want %d", code, exitError)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("stderr has %d lines, want 3:\n%s", len(lines), stderr)
	}
	for i, pos := range []string{":2:17: ", ":3:13: "} {
		if want := path + pos; !strings.HasPrefix(lines[i], want) {
			t.Errorf("stderr line %d = %q, want prefix %q", i+1, lines[i], want)
		}
	}
	if want := "netmgr admin: " + path + ": 2 errors, nothing loaded"; lines[2] != want {
		t.Errorf("last stderr line = %q, want %q", lines[2], want)
	}
	if len(f.loaded) != 0 {
		t.Errorf("a database with errors was sent to the server: %+v", f.loaded)
	}
}

func TestAdminShow(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"as is", goodDB, goodDB},
		{"final newline added", "admin_id tclark", "admin_id tclark\n"},
		{"empty database", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{db: client.DatabaseText{Text: tt.text}}
			t.Setenv(envAddr, f.start(t))
			code, stdout, stderr := runCLI(t, "netmgr", "admin", "show")
			if code != exitOK {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			if stdout != tt.want {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, tt.want)
			}
		})
	}
}

func TestWhyAgainstFakeServer(t *testing.T) {
	job := client.Job{ID: 7, Name: "test1", Owner: "tclark"}
	queued := []client.WhyInstance{{Instance: 2, Attempt: 1, Reason: "8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot",
		Rejections: []client.Rejection{{Filter: "keys", Count: 8, Reason: "lack key mathlab"}}}}
	tests := []struct {
		name   string
		why    []client.WhyInstance
		args   []string
		stdout string
	}{
		{"queued", queued, []string{"netstatus", "--why", "test1"},
			"instance 2 (attempt 1): 8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot\n"},
		{"nothing queued", nil, []string{"netmgr", "status", "--why", "7"}, "job test1.tclark has no queued instances\n"},
		{"json", queued, []string{"netstatus", "--why", "test1", "--json"},
			"[\n  {\n    \"instance\": 2,\n    \"attempt\": 1,\n    \"reason\": \"8 machines lack key mathlab; 3 have mem<=10; 1 has no free slot\",\n" +
				"    \"rejections\": [\n      {\n        \"filter\": \"keys\",\n        \"count\": 8,\n        \"reason\": \"lack key mathlab\"\n      }\n    ]\n  }\n]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{job: job, why: tt.why}
			t.Setenv(envAddr, f.start(t))
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, tt.stdout)
			}
			if len(f.whyRefs) != 1 {
				t.Errorf("asked why %d times, want 1", len(f.whyRefs))
			}
		})
	}
}
