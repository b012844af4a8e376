package outbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// crashChildEnv names the outbox file a re-executed test binary records
// into before it is killed (TestOutboxKeepsWhatACrashDidNotSend).
const crashChildEnv = "NETMGR_OUTBOX_CRASH_CHILD"

// crashEvents is how many attempts the crashing process records, each a
// started record and a CHILD_REGISTER; the first one's event is answered
// (removed) before the crash.
const crashEvents = 5

// TestMain lets the test binary play the stub that crashes.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		recordThenHang(path)
		return
	}
	os.Exit(m.Run())
}

// recordThenHang records crashEvents attempts, answers the first, says so
// on stdout and waits to be killed: the sender never ran.
func recordThenHang(path string) {
	out, err := Open(path, filepath.Join(filepath.Dir(path), "attempts"))
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	for i := range crashEvents {
		k := client.AttemptRef{JobID: uint64(i + 1), Attempt: 1}
		ev := client.ChildEvent{Kind: client.ChildRegister, JobID: k.JobID, Attempt: 1, PID: 1000 + i}
		if err := out.Record(k, &Record{PID: 1000 + i, Restartable: true}, ev); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
	}
	first, _ := out.Pending(1)
	if err := out.Remove(first[0].Seq); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	os.Stdout.WriteString("recorded\n")
	select {}
}

// A stub killed between recording its events and sending them loses
// none: a new outbox on the same file hands every unanswered event to the
// sender and knows every attempt. The one answered before the crash may
// come back (its removal rides on a later write the crash prevented),
// which delivery at least once allows, but never changed.
func TestOutboxKeepsWhatACrashDidNotSend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "recorded" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("crashing process said %q (%v), want \"recorded\"", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: its exit status is the signal

	out, err := Open(path, filepath.Join(filepath.Dir(path), "attempts"))
	if err != nil {
		t.Fatalf("reopen after the crash: %v", err)
	}
	defer out.Close()
	pending, err := out.Pending(100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]client.ChildEvent{}
	for _, e := range pending {
		got[e.Ev.JobID] = e.Ev
	}
	for i := range crashEvents {
		job := uint64(i + 1)
		ev, ok := got[job]
		if !ok {
			if job == 1 {
				continue // answered before the crash
			}
			t.Errorf("job %d's CHILD_REGISTER was lost in the crash; pending %v", job, pending)
			continue
		}
		if ev.Kind != client.ChildRegister || ev.PID != 1000+i {
			t.Errorf("job %d's event after the crash = %+v, want CHILD_REGISTER of pid %d", job, ev, 1000+i)
		}
	}
	if len(pending) < crashEvents-1 || len(pending) > crashEvents {
		t.Errorf("%d events pending after the crash, want %d or %d", len(pending), crashEvents-1, crashEvents)
	}
	known, err := out.KnownAttempts()
	if err != nil {
		t.Fatal(err)
	}
	for i := range crashEvents {
		k := client.AttemptRef{JobID: uint64(i + 1), Attempt: 1}
		if rec, ok := known[k]; !ok || rec.PID != 1000+i || !rec.Restartable {
			t.Errorf("attempt %s after the crash: %+v (known %v), want pid %d, restartable", k, rec, ok, 1000+i)
		}
	}
}
