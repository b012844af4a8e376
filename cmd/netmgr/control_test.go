package main

import (
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestControlAgainstFakeServer(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderr   string
		controls string
	}{
		{"suspend", []string{"netmgr", "suspend", "job4"}, exitOK, "job 4: 3 instances suspended\n", "", "suspend job4"},
		{"resume two", []string{"netmgr", "resume", "job4", "4"}, exitOK, "job 4: 3 instances resumed\njob 4: 3 instances resumed\n", "", "resume job4,resume 4"},
		{"restart", []string{"netmgr", "restart", "4"}, exitOK, "job 4: 3 instances restarted\n", "", "restart 4"},
		{"error names the job and stops", []string{"netmgr", "suspend", "job4", "missing", "job5"}, exitError,
			"job 4: 3 instances suspended\n", "netmgr suspend: suspend job missing: job missing not found\n", "suspend job4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{job: client.Job{ID: 4}}
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
			if got := strings.Join(f.controls, ","); got != tt.controls {
				t.Errorf("calls = %q, want %q", got, tt.controls)
			}
		})
	}
}
