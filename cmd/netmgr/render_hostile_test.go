package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// hostile is text a user could choose to attack whoever reads netstatus:
// a colour, a carriage return that overwrites the line, a newline that
// forges one, a tab that shifts columns, a raw CSI byte, a C1 CSI and a
// bidi override.
const hostile = "x\x1b[31mred\rCR\nNL\tTAB\x9bRAW\u009bC1\u202eRLO"

// hostileEscaped is hostile as printable writes it.
const hostileEscaped = `x\x1b[31mred\rCR\nNL\tTAB\x9bRAW\u009bC1\u202eRLO`

// hostileJob is a job whose every user-chosen field holds hostile text.
func hostileJob() client.Job {
	return client.Job{
		ID: 9, Name: "n" + hostile, Owner: "mallory", State: client.JobFailed, SubmittedAt: t0,
		Spec: client.JobSpec{
			Name: "n" + hostile, Binaries: map[string]string{client.AnyKey: "/bin/" + hostile},
			Args: []string{"a" + hostile, "with space" + hostile}, Dir: "/tmp/" + hostile,
			Keys: []string{"k" + hostile}, Machines: []string{"m" + hostile}, CopyOut: []string{"o" + hostile},
		},
		Instances: []client.Instance{
			{Index: 0, Attempt: 1, State: client.InstanceFailed, Machine: "m" + hostile, Binary: "/bin/" + hostile,
				Error: "exec: fork/exec /bin/x: " + hostile, Reason: "r" + hostile, StartedAt: t0, EndedAt: t0.Add(time.Second)},
			{Index: 1, Attempt: 1, State: client.InstanceCancelled, Reason: "c" + hostile},
		},
		Outputs: []client.Output{{Instance: 0, Attempt: 1, Files: []string{"f" + hostile}, Lost: []string{"l" + hostile}}},
	}
}

// TestRenderHostileText renders every view with hostile text in the
// fields users choose: nothing a terminal acts on gets through, the
// escaped form does, and the tables keep their columns.
func TestRenderHostileText(t *testing.T) {
	job := hostileJob()
	plain := sampleJobs()[0]
	machines := []client.Machine{
		{Name: "m" + hostile, Arch: "a" + hostile, MType: "t" + hostile, CPUs: 4, MemoryMB: 1024, State: client.MachineDraining,
			Problem: "p" + hostile, ReservedBy: "u" + hostile},
		sampleMachines()[0],
	}
	views := []struct {
		name   string
		render func(*bytes.Buffer) error
		table  bool
	}{
		{"jobs", func(b *bytes.Buffer) error { return renderJobs(b, []client.Job{job, plain}, t0) }, true},
		{"detail", func(b *bytes.Buffer) error { return renderJobDetail(b, job, t0) }, false},
		{"machines", func(b *bytes.Buffer) error { return renderMachines(b, machines, t0) }, true},
		{"why", func(b *bytes.Buffer) error {
			return renderWhy(b, job, []client.WhyInstance{{Instance: 2, Attempt: 1, Reason: "w" + hostile}})
		}, false},
		{"why cancelled", func(b *bytes.Buffer) error {
			j := job
			j.State = client.JobCancelled
			return renderWhy(b, j, nil)
		}, false},
		{"queues", func(b *bytes.Buffer) error {
			return renderQueues(b, []client.Queue{{Name: "q" + hostile, Priority: 1}, {Name: "short", Priority: 2}}, time.Time{})
		}, true},
		{"reservations", func(b *bytes.Buffer) error {
			return renderReservations(b, []client.Reservation{
				{ID: 1, Owner: "u" + hostile, Machines: []string{"m" + hostile}, From: t0},
				{ID: 2, Owner: "bob", Machines: []string{"flute"}, From: t0},
			}, t0)
		}, true},
		{"servers", func(b *bytes.Buffer) error {
			return renderServers(b, []client.Server{{Name: "s" + hostile, Error: "e" + hostile}, sampleServers()[0]})
		}, true},
		{"history", func(b *bytes.Buffer) error {
			return renderHistory(b, []client.HistoryAttempt{
				{Job: 9, Name: "n" + hostile, Attempt: 1, Owner: "mallory", Machine: "m" + hostile, State: "failed", Reason: "r" + hostile,
					Error: "e" + hostile, StartedAt: t0, EndedAt: t0.Add(time.Second)},
				{Job: 10, Attempt: 1, Owner: "bob", Machine: "flute", State: "exited", StartedAt: t0, EndedAt: t0.Add(time.Second)},
			}, time.UTC)
		}, true},
		{"event", func(b *bytes.Buffer) error {
			_, err := b.WriteString(formatEvent(client.Event{Index: 5, At: t0, Kind: "job-cancelled", Job: 9, Instance: -1,
				Machine: "m" + hostile, Detail: "d" + hostile}) + "\n")
			return err
		}, false},
		{"submitted and outcomes", func(b *bytes.Buffer) error {
			writeSubmitted(b, b, client.SubmitResponse{ID: 9, Name: "n" + hostile, Owner: "mallory", Unrunnable: "u" + hostile})
			writeOutcomes(b, job)
			return nil
		}, false},
	}
	var all bytes.Buffer
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := v.render(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			assertTerminalSafe(t, out, true)
			if !strings.Contains(out, hostileEscaped) {
				t.Errorf("output lacks the escaped text %s:\n%s", hostileEscaped, out)
			}
			if v.table {
				assertAligned(t, out)
			}
			all.WriteString("== " + v.name + "\n" + out)
		})
	}
	golden(t, "render_hostile.txt", all.Bytes())
}

// assertAligned fails t when a column of a table does not start at the
// same offset in every line: each column after the first starts after a
// run of two or more spaces, at an offset the header shares.
func assertAligned(t *testing.T, table string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	starts := func(line string) map[int]bool {
		m := map[int]bool{}
		rs := []rune(line)
		for i := 2; i < len(rs); i++ {
			if rs[i] != ' ' && rs[i-1] == ' ' && rs[i-2] == ' ' {
				m[i] = true
			}
		}
		return m
	}
	head := starts(lines[0])
	for _, l := range lines[1:] {
		for i := range starts(l) {
			if !head[i] {
				t.Errorf("a column starts at %d in %q but not in the header %q", i, l, lines[0])
			}
		}
	}
}

// TestJSONStaysRaw checks that --json output keeps the values as they
// are: encoding/json escapes the control characters itself, so the text
// is terminal-safe and decodes back to the hostile value.
func TestJSONStaysRaw(t *testing.T) {
	var b bytes.Buffer
	if err := renderJobsJSON(&b, []client.Job{hostileJob()}); err != nil {
		t.Fatal(err)
	}
	var rows []jobRow
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	// JSON cannot carry invalid UTF-8: the encoder writes U+FFFD for it.
	valid := strings.ToValidUTF8(hostile, "\ufffd")
	if got, want := rows[0].Name, "n"+valid; got != want {
		t.Errorf("name = %q, want %q", got, want)
	}
	if got, want := rows[0].Reason, "r"+valid; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	for i, c := range b.Bytes() {
		if c < 0x20 && c != '\n' || c == 0x7f {
			t.Errorf("JSON holds byte %#x at %d", c, i)
		}
	}
}

// TestRunEscapesErrors checks the top-level error printer: a server's
// answer that quotes a hostile name raw reaches stderr escaped, with the
// lines of a message of several lines kept (so a newline a server puts
// raw in its message stays one: the servers quote names with %q), and
// the name netkill was given is escaped whole.
func TestRunEscapesErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(client.ErrorResponse{Error: "job " + hostile + ": no such job\nsecond line"})
	}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"netkill", "--addr", srv.URL, "n" + hostile}, &stdout, &stderr); code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	got := stderr.String()
	assertTerminalSafe(t, got, true)
	fromServer := printableLines(strings.ToValidUTF8("job "+hostile+": no such job\nsecond line", "\ufffd"))
	want := "netkill: kill job n" + hostileEscaped + ": " + fromServer + "\n"
	if got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}
