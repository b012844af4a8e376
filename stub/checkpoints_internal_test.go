package stub

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

func TestIsCheckpointExit(t *testing.T) {
	rec := outbox.Record{Checkpoint: []string{"state"}, CheckpointExit: 85}
	for _, tc := range []struct {
		name string
		rec  outbox.Record
		res  supervisor.Result
		want bool
	}{
		{"the code", rec, supervisor.Result{ExitCode: 85}, true},
		{"another code", rec, supervisor.Result{ExitCode: 84}, false},
		{"success", rec, supervisor.Result{}, false},
		{"a signal", rec, supervisor.Result{ExitCode: 85, Signal: "KILL"}, false},
		{"a start error", rec, supervisor.Result{ExitCode: 85, Error: "exec failed"}, false},
		{"a job without checkpoints", outbox.Record{}, supervisor.Result{ExitCode: 85}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isCheckpointExit(tc.rec, tc.res); got != tc.want {
				t.Errorf("isCheckpointExit = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckpointSignal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rec       outbox.Record
		wantSig   unix.Signal
		wantGrace time.Duration
	}{
		{"its signal and grace", outbox.Record{Checkpoint: []string{"s"}, CheckpointExit: 85, CheckpointSignal: "USR1", GraceMS: 3000}, unix.SIGUSR1, 3 * time.Second},
		{"TERM and the default grace", outbox.Record{Checkpoint: []string{"s"}, CheckpointExit: 85}, unix.SIGTERM, defaultCheckpointGrace},
		{"an unknown signal", outbox.Record{Checkpoint: []string{"s"}, CheckpointExit: 85, CheckpointSignal: "NOPE"}, 0, 0},
		{"no checkpoints", outbox.Record{CheckpointSignal: "USR1"}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, grace := checkpointSignal(tc.rec)
			if sig != tc.wantSig || grace != tc.wantGrace {
				t.Errorf("checkpointSignal = %v, %v; want %v, %v", sig, grace, tc.wantSig, tc.wantGrace)
			}
		})
	}
}
