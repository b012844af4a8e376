package stub

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// TestPrologueFailureDrainsUntilReload starts attempts on a stub whose
// prologue fails, then passes: the first attempt ends as the machine's
// fault without running, the machine drains with the prologue's reason,
// a Start meanwhile runs nothing, and a reload ends the drain.
func TestPrologueFailureDrainsUntilReload(t *testing.T) {
	srv := newFakeServer(t, 0)
	dir := t.TempDir()
	flag := filepath.Join(dir, "fail")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	prologue := filepath.Join(dir, "prologue")
	if err := os.WriteFile(prologue, []byte("#!/bin/sh\nif [ -e "+flag+" ]; then echo scratch missing; exit 2; fi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newTestStub(t, Config{Servers: []string{srv.addr()}, Prologue: prologue, ScriptTimeout: 10 * time.Second})
	c := stubClient(t, s)

	first := shJob(1, 0, "echo ran > $PWD/ran")
	if reg := mustStart(t, c, first); reg != nil {
		t.Errorf("Start answered a REGISTER %+v, want none: the job never started", reg)
	}
	evs := srv.waitTerm(t, keyOf(first))
	term := evs[len(evs)-1]
	if !term.MachineFault || !strings.HasPrefix(term.Error, "prologue failed: "+prologue+" exit status 2: scratch missing") {
		t.Errorf("TERM machine fault %v error %q, want the machine's fault naming the prologue", term.MachineFault, term.Error)
	}
	if _, err := os.Stat(filepath.Join(attemptDirOf(s, keyOf(first)), "ran")); err == nil {
		t.Errorf("the job ran although its prologue failed")
	}
	if p := s.health.problem(); !strings.HasPrefix(p, "prologue failed: ") {
		t.Fatalf("problem = %q, want the machine drained for its prologue", p)
	}

	// The cause is fixed, but the drain holds until a reload.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	second := shJob(2, 0, "true")
	mustStart(t, c, second)
	if evs := srv.waitTerm(t, keyOf(second)); !evs[len(evs)-1].MachineFault {
		t.Errorf("a Start while drained ran: %+v", evs[len(evs)-1])
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if p := s.health.problem(); p != "" {
		t.Fatalf("problem after reload = %q, want none", p)
	}
	third := shJob(3, 0, "exit 0")
	if reg := mustStart(t, c, third); reg == nil {
		t.Fatalf("Start after the reload answered no REGISTER: the job did not run")
	}
	evs = srv.waitTerm(t, keyOf(third))
	if term := evs[len(evs)-1]; term.ExitCode != 0 || term.MachineFault {
		t.Errorf("TERM after the reload = %+v, want exit 0", term)
	}
}

// TestScriptEnv checks the epilogue's environment names the attempt and
// how it ended.
func TestScriptEnv(t *testing.T) {
	end := &client.ChildEvent{ExitCode: 143, Signal: "TERM", Reason: "timeout: run limit of 1s exceeded"}
	got := scriptEnv(scriptEpilogue, "flute", scriptAttempt{
		k: client.AttemptRef{JobID: 12, Instance: 1, Attempt: 2}, jobName: "sim", owner: "fred", execDir: "/tmp/x/12.1.2", end: end,
	})
	want := []string{"NETMGR_SCRIPT=epilogue", "NETMGR_JOB_ID=12", "NETMGR_JOB_NAME=sim", "NETMGR_INSTANCE=1", "NETMGR_ATTEMPT=2",
		"NETMGR_OWNER=fred", "NETMGR_USER=fred", "NETMGR_MACHINE=flute", "NETMGR_EXEC_DIR=/tmp/x/12.1.2",
		"NETMGR_EXIT_CODE=143", "NETMGR_SIGNAL=TERM", "NETMGR_REASON=timeout: run limit of 1s exceeded"}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("scriptEnv lacks %s: %q", w, got)
		}
	}
}

// TestScriptTimeout: a prologue still running after the script timeout is
// killed, and has failed.
func TestScriptTimeout(t *testing.T) {
	prologue := filepath.Join(t.TempDir(), "prologue")
	if err := os.WriteFile(prologue, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &siteScripts{prologue: prologue, timeout: 200 * time.Millisecond, log: slog.New(slog.DiscardHandler)}
	err := s.runPrologue(t.Context(), "flute", scriptAttempt{k: client.AttemptRef{JobID: 1, Attempt: 1}})
	if !errors.Is(err, errPrologue) || !strings.Contains(err.Error(), prologue+" timed out after 200ms") {
		t.Errorf("got %v, want the prologue failed for its timeout", err)
	}
}
