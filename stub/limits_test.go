package stub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/internal/trapstamp"
	"github.com/netmgr/netmgr/stub/supervisor"
)

func TestSetLimits(t *testing.T) {
	grace := supervisor.DefaultLimitGrace.Milliseconds()
	tests := []struct {
		name                  string
		req                   client.StartRequest
		runMS, graceMS, memKB int64
		warn                  int
		leadMS                int64
	}{
		{name: "none", graceMS: grace},
		{
			name:  "all",
			req:   client.StartRequest{MaxRunSeconds: 200, MaxMemMB: 20, GraceMS: 300},
			runMS: 200_000, graceMS: 300, memKB: 20 * 1024,
		},
		{
			name:  "a warning with a run limit",
			req:   client.StartRequest{MaxRunSeconds: 60, WarnSignal: "USR1", WarnLeadMS: 30_000},
			runMS: 60_000, graceMS: grace, warn: 10, leadMS: 30_000,
		},
		{
			name:    "a warning without a run limit is dropped",
			req:     client.StartRequest{WarnSignal: "USR1", WarnLeadMS: 30_000},
			graceMS: grace,
		},
		{
			name:    "negative means none",
			req:     client.StartRequest{MaxRunSeconds: -1, MaxMemMB: -1, GraceMS: -1},
			graceMS: grace,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec supervisor.Spec
			setLimits(&spec, tt.req)
			if spec.RunMS != tt.runMS || spec.GraceMS != tt.graceMS || spec.MemKB != tt.memKB || spec.WarnSignal != tt.warn || spec.WarnLeadMS != tt.leadMS {
				t.Errorf("setLimits = run %d ms, grace %d ms, mem %d KB, warn %d %d ms; want %d, %d, %d, %d %d",
					spec.RunMS, spec.GraceMS, spec.MemKB, spec.WarnSignal, spec.WarnLeadMS, tt.runMS, tt.graceMS, tt.memKB, tt.warn, tt.leadMS)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	srv := newFakeServer(t, 0)
	execDir := t.TempDir()
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, ExecDir: execDir})
	c := stubClient(t, s)

	runReason := "timeout: run limit of 1s exceeded"
	tests := []struct {
		name       string
		req        client.StartRequest
		during     func(t *testing.T, c *client.StubClient, req client.StartRequest, pid int) // after REGISTER
		wantCode   int
		wantSignal string
		wantReason string // prefix of the TERM's Reason; "" = none
		minTime    time.Duration
		check      func(t *testing.T, dir string, term client.ChildEvent)
	}{
		{
			name: "run limit sends TERM first",
			req: withLimits(shJob(1, 0, `trap "echo TERM > $PWD/trapped; exit 7" TERM; sleep 3600 & wait`),
				1, 0, 0),
			wantCode:   7,
			wantReason: runReason,
			minTime:    time.Second,
			check: func(t *testing.T, dir string, _ client.ChildEvent) {
				got, err := os.ReadFile(filepath.Join(dir, "trapped"))
				if err != nil {
					t.Fatalf("the job's trap left no file: %v", err)
				}
				if string(got) != "TERM\n" {
					t.Errorf("trapped = %q, want %q", got, "TERM\n")
				}
			},
		},
		{
			name:       "run limit KILLs a job ignoring TERM after the grace",
			req:        withLimits(shJob(2, 0, `trap "" TERM; sleep 3600`), 1, 0, 300),
			wantCode:   128 + 9,
			wantSignal: "KILL",
			wantReason: runReason,
			minTime:    time.Second + 300*time.Millisecond,
		},
		{
			// signal=USR1@2 with a 3 s limit: the trap stamps the
			// warning and the TERM with the time, and the job goes on
			// after the warning until the limit.
			name: "the warning comes its lead before the TERM",
			req: withWarning(withLimits(shJob(6, 0, `trap "date +%s.%N > $PWD/warned" USR1; `+
				`trap "date +%s.%N > $PWD/termed; exit 7" TERM; `+
				`while :; do sleep 3600 & wait; done`), 3, 0, 0), "USR1", 2000),
			wantCode:   7,
			wantReason: "timeout: run limit of 3s exceeded",
			minTime:    3 * time.Second,
			check: func(t *testing.T, dir string, _ client.ChildEvent) {
				warned, termed := trapstamp.Read(t, dir, "warned"), trapstamp.Read(t, dir, "termed")
				// The warning is due 1 s after the start and the TERM
				// 3 s after it: 2 s apart, less however late the
				// warning's delivery was.
				if gap := termed.Sub(warned); gap < 1500*time.Millisecond || gap > 2500*time.Millisecond {
					t.Errorf("the TERM came %v after the warning, want about the 2 s lead", gap)
				}
			},
		},
		{
			name: "memory limit KILLs a hog",
			req: withLimits(shJob(3, 0, `x=$(head -c 60000000 /dev/zero | tr "\0" a); sleep 60`),
				0, 20, 0),
			wantCode:   128 + 9,
			wantSignal: "KILL",
			wantReason: "memory: memory limit of 20 MB exceeded (resident ",
			check: func(t *testing.T, _ string, term client.ChildEvent) {
				if term.MaxRSSKB <= 20*1024 {
					t.Errorf("MaxRSSKB = %d, want above the 20 MB limit", term.MaxRSSKB)
				}
			},
		},
		{
			name:       "disk limit KILLs a writer",
			req:        withDisk(shJob(7, 0, `head -c 8000000 /dev/zero > big; sleep 60`), 2),
			wantCode:   128 + 9,
			wantSignal: "KILL",
			wantReason: "disk: disk limit of 2 MB exceeded (exec dir ",
		},
		{
			// The job's own CUDA_VISIBLE_DEVICES gives way to the GPUs
			// the Start gives it.
			name: "the GPUs given are exactly the job's CUDA_VISIBLE_DEVICES and NETMGR_GPUS",
			req: withGPUs(shJob(8, 0, `echo "$CUDA_VISIBLE_DEVICES $NETMGR_GPUS" > gpus`),
				[]string{"CUDA_VISIBLE_DEVICES=7"}, 1, 3),
			check: func(t *testing.T, dir string, _ client.ChildEvent) {
				got, _ := os.ReadFile(filepath.Join(dir, "gpus"))
				if string(got) != "1,3 1,3\n" {
					t.Errorf("the job saw GPUs %q, want %q", got, "1,3 1,3\n")
				}
			},
		},
		{
			name: "a job within its limits is not touched",
			req:  withLimits(shJob(4, 0, `sleep 1; echo ok`), 30, 200, 0),
			check: func(t *testing.T, dir string, _ client.ChildEvent) {
				got, _ := os.ReadFile(filepath.Join(dir, "stdout"))
				if string(got) != "ok\n" {
					t.Errorf("stdout = %q, want %q", got, "ok\n")
				}
			},
		},
		{
			// With the default grace of 10 s a stopped group would only
			// end by SIGKILL if the TERM were not followed by SIGCONT.
			name:       "a stopped group over its run limit still ends",
			req:        withLimits(shJob(5, 0, `sleep 3600`), 2, 0, 0),
			during:     stopGroup,
			wantCode:   128 + 15,
			wantSignal: "TERM",
			wantReason: "timeout: run limit of 2s exceeded",
			minTime:    2 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := keyOf(tt.req)
			start := time.Now()
			reg := mustStart(t, c, tt.req)
			if tt.during != nil {
				tt.during(t, c, tt.req, reg.PID)
			}
			evs := srv.waitTerm(t, k)
			elapsed := time.Since(start)
			term := evs[len(evs)-1]
			if term.ExitCode != tt.wantCode || term.Signal != tt.wantSignal {
				t.Errorf("TERM exit code %d signal %q, want %d and %q", term.ExitCode, term.Signal, tt.wantCode, tt.wantSignal)
			}
			switch {
			case tt.wantReason == "" && term.Reason != "":
				t.Errorf("TERM reason = %q, want none", term.Reason)
			case !strings.HasPrefix(term.Reason, tt.wantReason):
				t.Errorf("TERM reason = %q, want %q", term.Reason, tt.wantReason)
			}
			if elapsed < tt.minTime {
				t.Errorf("ended after %v, want at least %v", elapsed, tt.minTime)
			}
			if tt.check != nil {
				tt.check(t, attemptDirOf(s, k), term)
			}
		})
	}
}

// withLimits returns req with a run limit in seconds, a memory limit in
// MB and a grace in milliseconds.
func withLimits(req client.StartRequest, runSeconds, memMB, graceMS int64) client.StartRequest {
	req.MaxRunSeconds, req.MaxMemMB, req.GraceMS = runSeconds, memMB, graceMS
	return req
}

// withDisk returns req with a disk limit of diskMB.
func withDisk(req client.StartRequest, diskMB int64) client.StartRequest {
	req.DiskMB = diskMB
	return req
}

// withGPUs returns req with env and the GPUs of the given indices.
func withGPUs(req client.StartRequest, env []string, gpus ...int) client.StartRequest {
	req.Env, req.GPUs = env, gpus
	return req
}

// withWarning returns req with the warning signal sig leadMS before its
// run limit.
func withWarning(req client.StartRequest, sig string, leadMS int64) client.StartRequest {
	req.WarnSignal, req.WarnLeadMS = sig, leadMS
	return req
}

// stopGroup stops the attempt's process group the way netmgr suspend
// does, through the stub's Signal, and waits until its leader is stopped.
func stopGroup(t *testing.T, c *client.StubClient, req client.StartRequest, pid int) {
	t.Helper()
	err := c.Signal(context.Background(), client.SignalRequest{
		JobID: req.JobID, Instance: req.Instance, Attempt: req.Attempt, Signal: "STOP",
	})
	if err != nil {
		t.Fatalf("Signal STOP: %v", err)
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, waitTimeout, "the job to be stopped", func() bool {
		p, err := fs.Proc(pid)
		if err != nil {
			t.Fatalf("the job ended before it was stopped: %v", err)
		}
		st, err := p.Stat()
		return err == nil && st.State == "T"
	})
}
