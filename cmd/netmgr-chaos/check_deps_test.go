package main

import (
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestCheckDeps(t *testing.T) {
	// Job 1 ran 10.0-12.0 and exited 0; job 2 waits afterok=1.
	ledger := func(text ...string) []record {
		var recs []record
		for _, s := range text {
			recs = append(recs, ledgerOf(t, s)...)
		}
		return recs
	}
	dep1 := "start 1 0 1 stub1 10.0\nbeat 1 0 1 stub1 11.0\nend 1 0 1 stub1 12.0 0\n"
	jobs := func(state1, state2 string) map[uint64]client.Job {
		return map[uint64]client.Job{
			1: {ID: 1, State: state1, Instances: []client.Instance{{State: client.InstanceExited}}},
			2: {ID: 2, State: state2, Instances: []client.Instance{{State: client.InstanceExited}}},
		}
	}
	acks := []ack{{ID: 1}, {ID: 2, AfterOK: []uint64{1}}}
	for _, tc := range []struct {
		name         string
		jobs         map[uint64]client.Job
		recs         []record
		want         string // a violation's detail contains it; "" for none
		wantNote     bool
		ackOverrides []ack
	}{
		{name: "in order", jobs: jobs(client.JobDone, client.JobDone),
			recs: ledger(dep1, "start 2 0 1 stub2 12.3\nend 2 0 1 stub2 13.3 0\n")},
		{name: "started in the ledger clock's tick the dependency ended in", jobs: jobs(client.JobDone, client.JobDone),
			recs: ledger(dep1, "start 2 0 1 stub2 12.0\nend 2 0 1 stub2 13.0 0\n")},
		{name: "started a tick before the dependency ended", jobs: jobs(client.JobDone, client.JobDone),
			recs: ledger(dep1, "start 2 0 1 stub2 11.99\nend 2 0 1 stub2 12.99 0\n"), want: "before its dependency job 1"},
		{name: "started before the dependency ended", jobs: jobs(client.JobDone, client.JobDone),
			recs: ledger(dep1, "start 2 0 1 stub2 11.5\nend 2 0 1 stub2 12.5 0\n"), want: "before its dependency job 1"},
		{name: "cancelled as it should be", jobs: jobs(client.JobFailed, client.JobCancelled),
			recs: ledger(dep1)},
		{name: "ran although afterok failed", jobs: jobs(client.JobFailed, client.JobDone),
			recs: ledger(dep1, "start 2 0 1 stub2 12.3\n"), want: "but the job is done"},
		{name: "cancelled although allowed", jobs: jobs(client.JobDone, client.JobCancelled),
			recs: ledger(dep1), want: "yet the job was cancelled"},
		{name: "cancelled on an end a late result revised is a note",
			jobs: map[uint64]client.Job{
				1: {ID: 1, State: client.JobDone, Instances: []client.Instance{{State: client.InstanceExited}}},
				2: {ID: 2, State: client.JobCancelled, Instances: []client.Instance{{State: client.InstanceCancelled,
					Reason: "dependency: afterok job 1 (a) failed"}}},
			},
			recs: ledger(dep1), wantNote: true},
		{name: "after runs however the dependency ended", jobs: jobs(client.JobFailed, client.JobDone),
			recs: ledger(dep1, "start 2 0 1 stub2 12.3\n"), ackOverrides: []ack{{ID: 1}, {ID: 2, After: []uint64{1}}}},
		{name: "overlap with a lost dependency is a note",
			jobs: map[uint64]client.Job{
				1: {ID: 1, State: client.JobFailed, Instances: []client.Instance{{State: client.InstanceLost}}},
				2: {ID: 2, State: client.JobDone, Instances: []client.Instance{{State: client.InstanceExited}}},
			},
			recs:         ledger("start 1 0 1 stub1 10.0\nbeat 1 0 1 stub1 11.0\nbeat 1 0 1 stub1 14.0\n", "start 2 0 1 stub2 12.3\n"),
			ackOverrides: []ack{{ID: 1}, {ID: 2, After: []uint64{1}}}, wantNote: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := acks
			if tc.ackOverrides != nil {
				a = tc.ackOverrides
			}
			vs, notes := checkDeps(a, tc.jobs, tc.recs)
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Fatalf("violations %v, want none", vs)
			case tc.want != "" && (len(vs) != 1 || !strings.Contains(vs[0].Detail, tc.want) || vs[0].Kind != vDependency):
				t.Fatalf("violations %v, want one %s containing %q", vs, vDependency, tc.want)
			}
			if tc.wantNote != (len(notes) > 0) {
				t.Errorf("notes %q, want a note: %v", notes, tc.wantNote)
			}
		})
	}
}

func TestChainedCountsEveryLink(t *testing.T) {
	acks := []ack{{ID: 1}, {ID: 2, AfterOK: []uint64{1}}, {ID: 3, After: []uint64{2}}, {ID: 4}}
	if n := chained(acks); n != 3 {
		t.Errorf("chained = %d, want 3 (jobs 1, 2, 3)", n)
	}
}

// A chain is submitted in order, each link naming the job before it.
func TestDrawChainLinks(t *testing.T) {
	w := newWorkload(nil, 0, 1)
	links := w.drawChain()
	if len(links) != 3 || links[0].dep != "" || links[1].dep != depAfterOK || links[2].dep != depAfter {
		t.Fatalf("chain deps = %q %q %q, want none, afterok, after", links[0].dep, links[1].dep, links[2].dep)
	}
	if links[0].req.Spec.Restart != client.RestartNo {
		t.Errorf("the head of a chain has restart=%s; it must be no, so that a failure is final and its afterok dependent is cancelled", links[0].req.Spec.Restart)
	}
}
