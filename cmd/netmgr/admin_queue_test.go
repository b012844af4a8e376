package main

import (
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestParseMaxRun(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"200", 12000, false},
		{"0", 0, false},
		{"90s", 90, false},
		{"30m", 1800, false},
		{"2h", 7200, false},
		{"3h20m", 12000, false},
		{"0s", 0, false},
		{"-1", 0, true},
		{"-5m", 0, true},
		{"1500ms", 0, true},
		{"1.5", 0, true},
		{"soon", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseMaxRun(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseMaxRun(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseMaxRun(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestAdminQueueAgainstFakeServer(t *testing.T) {
	newQ := client.Queue{Name: "NEW_Q", Priority: 2, MaxSize: 120, MaxActive: 100, MaxRunSeconds: 12000, MaxMemMB: 20, Jobs: 3, Waiting: 1}
	existing := []client.Queue{{Name: client.DefaultQueue}, newQ}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
		sent   []client.Queue // bodies of PUT, in order
	}{
		{
			name:   "add with every limit",
			args:   []string{"netmgr", "admin", "queue", "add", "--priority", "5", "--max-size", "10", "short", "--max-active", "4", "--max-run", "90s", "--max-mem", "2048"},
			stdout: "queue short added: priority 5, max size 10, max active 4, max run 90s, max mem 2G\n",
			sent:   []client.Queue{{Name: "short", Priority: 5, MaxSize: 10, MaxActive: 4, MaxRunSeconds: 90, MaxMemMB: 2048}},
		},
		{
			name:   "add without limits",
			args:   []string{"netmgr", "admin", "queue", "add", "batch"},
			stdout: "queue batch added: priority 0, no limits\n",
			sent:   []client.Queue{{Name: "batch"}},
		},
		{
			name:   "add refuses an existing queue",
			args:   []string{"netmgr", "admin", "queue", "add", "--max-size", "5", "NEW_Q"},
			code:   exitError,
			stderr: "netmgr admin: add queue NEW_Q: queue NEW_Q already exists (netmgr admin queue set changes its limits)\n",
		},
		{
			name:   "set changes only the flags given",
			args:   []string{"netmgr", "admin", "queue", "set", "NEW_Q", "--priority", "-1", "--max-run=0"},
			stdout: "queue NEW_Q set: priority -1, max size 120, max active 100, max mem 20M\n",
			sent:   []client.Queue{{Name: "NEW_Q", Priority: -1, MaxSize: 120, MaxActive: 100, MaxMemMB: 20}},
		},
		{
			name:   "set minutes",
			args:   []string{"netmgr", "admin", "queue", "set", "--max-run", "30", "NEW_Q"},
			stdout: "queue NEW_Q set: priority 2, max size 120, max active 100, max run 30m, max mem 20M\n",
			sent:   []client.Queue{{Name: "NEW_Q", Priority: 2, MaxSize: 120, MaxActive: 100, MaxRunSeconds: 1800, MaxMemMB: 20}},
		},
		{
			name:   "set the default queue",
			args:   []string{"netmgr", "admin", "queue", "set", "--max-active", "8", "default"},
			stdout: "queue default set: priority 0, max active 8\n",
			sent:   []client.Queue{{Name: client.DefaultQueue, MaxActive: 8}},
		},
		{
			name:   "set refuses an unknown queue",
			args:   []string{"netmgr", "admin", "queue", "set", "--priority", "1", "nosuch"},
			code:   exitError,
			stderr: "netmgr admin: set queue nosuch: queue nosuch does not exist (netmgr admin queue add creates it; netstatus -q lists the queues)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{queues: existing}
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
			if len(f.setQueues) != len(tt.sent) {
				t.Fatalf("sent %+v, want %+v", f.setQueues, tt.sent)
			}
			for i := range tt.sent {
				if f.setQueues[i] != tt.sent[i] {
					t.Errorf("sent %+v, want %+v", f.setQueues[i], tt.sent[i])
				}
			}
		})
	}
}

func TestAdminQueueRemoveAgainstFakeServer(t *testing.T) {
	f := &fakeServer{}
	t.Setenv(envAddr, f.start(t))
	code, stdout, stderr := runCLI(t, "netmgr", "admin", "queue", "remove", "NEW_Q")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	if want := "queue NEW_Q removed\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if got, want := strings.Join(f.removed, ","), "NEW_Q"; got != want {
		t.Errorf("removed %q, want %q", got, want)
	}

	code, _, stderr = runCLI(t, "netmgr", "admin", "queue", "remove", "missing")
	if code != exitError {
		t.Errorf("exit code = %d, want %d", code, exitError)
	}
	if want := "netmgr admin: remove queue missing: queue missing not found\n"; stderr != want {
		t.Errorf("stderr = %q, want %q", stderr, want)
	}
}

func TestQueuesStatusAgainstFakeServer(t *testing.T) {
	f := &fakeServer{queues: []client.Queue{
		{Name: client.DefaultQueue, Running: 2},
		{Name: "NEW_Q", Priority: 1, MaxSize: 120, MaxActive: 100, MaxRunSeconds: 12000, MaxMemMB: 20, Jobs: 3, Waiting: 5},
	}}
	t.Setenv(envAddr, f.start(t))
	code, stdout, stderr := runCLI(t, "netstatus", "-q")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	want := "QUEUE    PRIORITY  MAXSIZE  MAXACTIVE  MAXRUN  MAXMEM  JOBS  WAITING  RUNNING\n" +
		"NEW_Q    1         120      100        200m    20M     3     5        0\n" +
		"default  0         -        -          -       -       0     0        2\n"
	if stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
	}
}
