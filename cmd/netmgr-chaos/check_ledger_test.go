package main

import (
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// epoch is the wall-clock time the test ledger clock's zero stands for.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testClock maps wall-clock times to seconds after epoch.
func testClock(t time.Time) float64 { return t.Sub(epoch).Seconds() }

// at is the wall-clock time of ledger time s.
func at(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }

// ledgerOf parses a hand-made ledger file named after its first record.
func ledgerOf(t *testing.T, text string) []record {
	t.Helper()
	text = strings.TrimLeft(text, "\n")
	f := strings.Fields(text)
	recs, problems := parseLedgerFile(f[1]+"."+f[2], []byte(text))
	if len(problems) > 0 {
		t.Fatalf("parse ledger: %v", problems)
	}
	return recs
}

// jobWith is job 7 with one instance in the given final state.
func jobWith(restart string, in client.Instance) map[uint64]client.Job {
	return map[uint64]client.Job{7: {ID: 7, Spec: client.JobSpec{Restart: restart}, Instances: []client.Instance{in}}}
}

func TestCheckLedger(t *testing.T) {
	exited := func(attempt uint64, end float64) client.Instance {
		return client.Instance{Index: 0, Attempt: attempt, State: client.InstanceExited, Machine: "stub2", EndedAt: at(end)}
	}
	tests := []struct {
		name    string
		ledger  string
		jobs    map[uint64]client.Job
		freezes []freeze
		want    []string // kind and a piece of the detail, one per violation
		notes   int      // frozen-machine overlaps reported as notes
	}{{
		name: "one clean attempt",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 11.00
end 7 0 1 stub1 11.50 0
`,
		jobs: jobWith(client.RestartNo, exited(1, 11.6)),
	}, {
		name: "restart without overlap",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 11.00
end 7 0 1 stub1 11.00 3
start 7 0 2 stub2 12.00
end 7 0 2 stub2 13.00 0
`,
		jobs: jobWith(client.RestartOnFailure, exited(2, 13.1)),
	}, {
		name: "machine loss: first attempt never ends, replacement starts after its last beat",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 11.00
beat 7 0 1 stub1 12.00
start 7 0 2 stub2 20.00
end 7 0 2 stub2 21.00 0
`,
		jobs: jobWith(client.RestartAlways, exited(2, 21.1)),
	}, {
		name: "overlap: replacement starts while the first still beats",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 11.00
start 7 0 2 stub2 11.50
beat 7 0 1 stub1 12.00
end 7 0 1 stub1 13.00 0
end 7 0 2 stub2 12.50 0
`,
		jobs: jobWith(client.RestartAlways, exited(2, 12.6)),
		want: []string{"doubled: attempt 2 (stub2@11.50, seen 11.50-12.50) started while attempt 1 (stub1@10.00, seen 10.00-13.00) ran: 1.00s overlap at least"},
	}, {
		name: "frozen with its machine, killed at the thaw: a note",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 10.40
start 7 0 2 stub2 13.00
beat 7 0 1 stub1 14.20
end 7 0 2 stub2 15.00 0
`,
		jobs:    jobWith(client.RestartAlways, exited(2, 15.1)),
		freezes: []freeze{{Host: "stub1", From: 10.5, To: 14.0}},
		notes:   1,
	}, {
		name: "frozen, but alive long after the thaw: doubled",
		ledger: `
start 7 0 1 stub1 10.00
start 7 0 2 stub2 13.00
beat 7 0 1 stub1 15.50
end 7 0 2 stub2 16.00 0
`,
		jobs:    jobWith(client.RestartAlways, exited(2, 16.1)),
		freezes: []freeze{{Host: "stub1", From: 10.5, To: 14.0}},
		want:    []string{"doubled: attempt 2 (stub2@13.00, seen 13.00-16.00) started while attempt 1"},
	}, {
		name: "one attempt started twice",
		ledger: `
start 7 0 1 stub1 10.00
end 7 0 1 stub1 11.00 0
start 7 0 1 stub3 30.00
end 7 0 1 stub3 31.00 0
`,
		jobs: jobWith(client.RestartOnFailure, exited(1, 11.1)),
		want: []string{
			"doubled: attempt 1 started 2 times (stub1@10.00,stub3@30.00)",
			"doubled: attempt 1 started on stub3 at 30.00, after the instance ended",
		},
	}, {
		name: "finished job runs again with a new attempt",
		ledger: `
start 7 0 1 stub1 10.00
end 7 0 1 stub1 11.00 0
start 7 0 2 stub2 40.00
end 7 0 2 stub2 41.00 0
`,
		jobs: jobWith(client.RestartNo, exited(1, 11.1)),
		want: []string{
			"doubled: has no restart policy but ran 2 attempts",
			"doubled: attempt 2 ran but the database's last attempt is 1",
			"doubled: attempt 2 started on stub2 at 40.00, after the instance ended (exited, attempt 1) at 11.10",
		},
	}, {
		name: "start after the recorded end of a restartable instance",
		ledger: `
start 7 0 1 stub1 10.00
end 7 0 1 stub1 11.00 3
start 7 0 2 stub2 12.00
end 7 0 2 stub2 13.00 0
start 7 0 2 stub4 50.00
`,
		jobs: jobWith(client.RestartOnFailure, exited(2, 13.1)),
		want: []string{
			"doubled: attempt 2 started 2 times",
			"doubled: attempt 2 started on stub4 at 50.00, after the instance ended",
		},
	}, {
		name: "missing end: the database says exited 0 but the attempt never finished",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 11.00
`,
		jobs: jobWith(client.RestartNo, exited(1, 30)),
		want: []string{"lost: the database says attempt 1 exited 0 but it never wrote its end"},
	}, {
		name: "missing end of a lost instance is no violation",
		ledger: `
start 7 0 1 stub1 10.00
beat 7 0 1 stub1 11.00
`,
		jobs: jobWith(client.RestartNo, client.Instance{Attempt: 1, State: client.InstanceLost, EndedAt: at(30)}),
	}, {
		name: "exited 0 in the database, status 3 in the ledger",
		ledger: `
start 7 0 1 stub1 10.00
end 7 0 1 stub1 11.00 3
`,
		jobs: jobWith(client.RestartNo, exited(1, 11.1)),
		want: []string{"lost: the database says attempt 1 exited 0 but the job ended with status 3"},
	}, {
		name: "exited in the database, nothing in the ledger",
		ledger: `
start 7 0 1 stub1 10.00
end 7 0 1 stub1 11.00 3
`,
		jobs: jobWith(client.RestartOnFailure, exited(2, 20)),
		want: []string{"lost: the database says attempt 2 exited 0 but the ledger has no record of it"},
	}, {
		name: "ran but the database has no such job",
		ledger: `
start 7 0 1 stub1 10.00
end 7 0 1 stub1 11.00 0
`,
		jobs: map[uint64]client.Job{},
		want: []string{"lost: ran (the ledger has it) but is missing from the database"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, notes := checkLedger(ledgerOf(t, tt.ledger), tt.jobs, testClock, tt.freezes)
			if len(notes) != tt.notes {
				t.Errorf("got notes %q, want %d", notes, tt.notes)
			}
			if len(vs) != len(tt.want) {
				t.Fatalf("got %d violations %v, want %d %q", len(vs), vs, len(tt.want), tt.want)
			}
			for i, v := range vs {
				got := v.Kind + ": " + v.Detail
				if !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("violation %d: got %q, want it to start with %q", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestParseLedgerFile(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		text     string
		records  int
		problems []string
	}{
		{name: "good", file: "3.1", text: "start 3 1 1 stub1 5.01 \nend 3 1 1 stub1 6.02 0\n", records: 2},
		{name: "empty", file: "3.1", text: ""},
		{name: "torn last line", file: "3.1", text: "start 3 1 1 stub1 5.01\nbeat 3 1", records: 1,
			problems: []string{"3.1: last line is not terminated", "3.1:2: want KIND JOB"}},
		{name: "wrong file", file: "3.0", text: "start 3 1 1 stub1 5.01\n", records: 1,
			problems: []string{"3.0:1: record of 3.1 in the wrong file"}},
		{name: "end without status", file: "3.1", text: "end 3 1 1 stub1 5.01\n",
			problems: []string{"3.1:1: end record without a status"}},
		{name: "unknown kind", file: "3.1", text: "stop 3 1 1 stub1 5.01\n",
			problems: []string{`3.1:1: unknown kind "stop"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, problems := parseLedgerFile(tt.file, []byte(tt.text))
			if len(recs) != tt.records {
				t.Errorf("got %d records, want %d", len(recs), tt.records)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("got problems %q, want %q", problems, tt.problems)
			}
			for i := range problems {
				if !strings.HasPrefix(problems[i], tt.problems[i]) {
					t.Errorf("problem %d: got %q, want it to start with %q", i, problems[i], tt.problems[i])
				}
			}
		})
	}
}
