package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// timeline is a run's faults in ledger seconds: pause-all 10-16, an
// isolated stub3 30-42 with kill-leader 33-38, kill-all 60-68, a killed
// stub5 120-135, and a cut-stubs that could not be injected.
func timeline() []injected {
	servers := []node{{Name: "s1"}, {Name: "s2"}, {Name: "s3"}}
	return []injected{
		{Fault: fault{Kind: faultPauseAll}, Targets: servers, From: 10, To: 16},
		{Fault: fault{Kind: faultIsolateStub}, Targets: []node{{Name: "stub3"}}, From: 30, To: 42},
		{Fault: fault{Kind: faultKillLeader}, Targets: []node{{Name: "s2"}}, From: 33, To: 38},
		{Fault: fault{Kind: faultKillAll}, Targets: servers, From: 60, To: 68},
		{Fault: fault{Kind: faultKillStub}, Targets: []node{{Name: "stub5"}}, From: 120, To: 135},
		{Fault: fault{Kind: faultCutStubs}, From: 200, To: 210, Err: errors.New("no such container")},
	}
}

func TestAttributeStop(t *testing.T) {
	inj := timeline()
	tests := []struct {
		name      string
		host      string
		last      float64
		cause     string
		fault     string // kind of the fault charged; "" for none
		aftermath bool
	}{
		{"stopped 3 s into pause-all", "stub1", 12.9, causeControlPlane, faultPauseAll, false},
		{"last beat just before pause-all", "stub1", 8.6, causeControlPlane, faultPauseAll, false},
		{"last beat too long before pause-all", "stub1", 8.4, causeNoFault, "", false},
		{"at the thaw of pause-all", "stub1", 17.9, causeControlPlane, faultPauseAll, false},
		{"after pause-all healed", "stub1", 25, causeControlPlane, faultPauseAll, true},
		{"the isolated stub itself", "stub3", 33.1, causeOwnMachine, faultIsolateStub, false},
		{"another stub while stub3 is isolated and the leader killed", "stub1", 34, causeOtherFault, faultKillLeader, false},
		{"another stub at the end of the isolation", "stub2", 41, causeOtherFault, faultIsolateStub, false},
		{"stopped 3 s into kill-all", "stub4", 63, causeControlPlane, faultKillAll, false},
		{"kill-all aftermath", "stub4", 97.9, causeControlPlane, faultKillAll, true},
		{"beyond the aftermath", "stub4", 98.1, causeNoFault, "", false},
		{"the killed machine, after the aftermath", "stub5", 119.5, causeOwnMachine, faultKillStub, false},
		{"a fault that was not injected", "stub1", 205, causeNoFault, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause, f, after := attributeStop(tt.host, tt.last, inj)
			kind := ""
			if f != nil {
				kind = f.Fault.Kind
			}
			if cause != tt.cause || kind != tt.fault || after != tt.aftermath {
				t.Errorf("got %q, %q, after=%v; want %q, %q, after=%v", cause, kind, after, tt.cause, tt.fault, tt.aftermath)
			}
		})
	}
}

func TestAttributeStopOwnMachineBeatsControlPlane(t *testing.T) {
	// A schedule never overlaps them (validate), but a replayed or hand-
	// written timeline may: the machine's own fault explains the stop.
	inj := []injected{
		{Fault: fault{Kind: faultCutStubs}, From: 10, To: 20},
		{Fault: fault{Kind: faultKillStub}, Targets: []node{{Name: "stub2"}}, From: 12, To: 30},
	}
	if cause, _, _ := attributeStop("stub2", 12, inj); cause != causeOwnMachine {
		t.Errorf("stub2: got %q, want %q", cause, causeOwnMachine)
	}
	if cause, _, _ := attributeStop("stub1", 14, inj); cause != causeControlPlane {
		t.Errorf("stub1: got %q, want %q", cause, causeControlPlane)
	}
}

func TestFindStops(t *testing.T) {
	recs := ledgerOf(t, `
start 7 0 1 stub1 5.00
beat 7 0 1 stub1 6.00
beat 7 0 1 stub1 12.50
start 7 0 2 stub2 20.00
end 7 0 2 stub2 21.00 0
`)
	recs = append(recs, ledgerOf(t, `
start 7 1 1 stub3 5.00
end 7 1 1 stub3 6.00 3
start 7 1 2 stub3 7.00
beat 7 1 2 stub3 8.00
start 7 1 3 stub4 31.00
beat 7 1 3 stub4 33.00
start 7 1 4 stub1 40.00
end 7 1 4 stub1 41.00 0
`)...)
	recs = append(recs, ledgerOf(t, `
start 8 0 1 stub1 11.00
beat 8 0 1 stub1 12.00
`)...)
	recs = append(recs, ledgerOf(t, `
start 9 0 1 stub1 11.00
beat 9 0 1 stub1 12.00
`)...)
	jobs := map[uint64]client.Job{
		7: {ID: 7, Spec: client.JobSpec{Restart: client.RestartOnFailure}, Instances: []client.Instance{
			{Index: 0, Attempt: 2, State: client.InstanceExited},
			{Index: 1, Attempt: 4, State: client.InstanceExited},
		}},
		// Not restartable: its attempt lost with a machine is not work.
		8: {ID: 8, Spec: client.JobSpec{Restart: client.RestartNo}, Instances: []client.Instance{
			{Index: 0, Attempt: 1, State: client.InstanceLost},
		}},
		// Restartable, but the ledger's attempt is the database's current
		// one: whether it finished is checkLedger's question.
		9: {ID: 9, Spec: client.JobSpec{Restart: client.RestartAlways}, Instances: []client.Instance{
			{Index: 0, Attempt: 1, State: client.InstanceRunning},
		}},
	}
	reasons := stopReasons([]client.Event{
		{Kind: "instance-started", Job: 7, Instance: 0, Attempt: 1},
		{Kind: "instance-killed", Job: 7, Instance: 0, Attempt: 1, Detail: client.ReasonLeaseExpired},
		{Kind: "instance-lost", Job: 7, Instance: 0, Attempt: 1, Detail: "the lease of machine stub1 expired"},
		{Kind: "instance-lost", Job: 7, Instance: 1, Attempt: 3, Detail: "the lease of machine stub4 expired"},
	})
	stops := findStops(recs, jobs, timeline(), reasons)
	want := []string{
		"control plane: job 7 instance 0 attempt 1 on stub1, last seen +12.5s, during pause-all s1,s2,s3 (+10.0s..+16.0s): instance-killed: " + client.ReasonLeaseExpired,
		"no fault: job 7 instance 1 attempt 2 on stub3, last seen +8.0s",
		// stub4 was not the isolated machine, and the fault in force
		// that began last is the leader's kill.
		"other fault: job 7 instance 1 attempt 3 on stub4, last seen +33.0s, during kill-leader s2 (+33.0s..+38.0s): instance-lost: the lease of machine stub4 expired",
	}
	if len(stops) != len(want) {
		t.Fatalf("got %d stops %+v, want %d", len(stops), stops, len(want))
	}
	for i, s := range stops {
		if got := s.Cause + ": " + s.String(0); got != want[i] {
			t.Errorf("stop %d:\ngot  %s\nwant %s", i, got, want[i])
		}
	}
	if got := workLost(stops); got != 1 {
		t.Errorf("workLost = %d, want 1", got)
	}
}

func TestCheckWorkLost(t *testing.T) {
	stops := []stop{{Cause: causeControlPlane}, {Cause: causeControlPlane}, {Cause: causeOwnMachine}, {Cause: causeControlPlane}}
	tests := []struct {
		limit int
		want  int
	}{{-1, 0}, {0, 1}, {2, 1}, {3, 0}, {10, 0}}
	for _, tt := range tests {
		vs := checkWorkLost(stops, tt.limit)
		if len(vs) != tt.want {
			t.Errorf("limit %d: got %v, want %d violations", tt.limit, vs, tt.want)
		}
		for _, v := range vs {
			if v.Kind != vWorkLost || !strings.Contains(v.Detail, "3 attempts") {
				t.Errorf("limit %d: got %+v, want a work-lost violation naming 3 attempts", tt.limit, v)
			}
		}
	}
}

func TestReportWorkLost(t *testing.T) {
	inj := timeline()
	r := report{Seed: 1, Jobs: 5, Start: 0, Injected: inj, Stops: []stop{
		{Job: 3, Attempt: 1, Host: "stub1", Last: 12, Cause: causeControlPlane, Fault: &inj[0]},
		{Job: 4, Attempt: 1, Host: "stub2", Last: 13, Cause: causeControlPlane, Fault: &inj[0]},
		{Job: 5, Attempt: 1, Host: "stub3", Last: 33, Cause: causeOwnMachine, Fault: &inj[1]},
	}}
	var buf bytes.Buffer
	r.write(&buf)
	out := buf.String()
	for _, want := range []string{
		"chaos: stops: 3 attempts of restartable jobs stopped before their end: 2 by whole-control-plane faults (work lost), 1 by a fault of their own machine, 0 during other faults, 0 with no fault in force\n",
		"chaos: work lost by fault: pause-all s1,s2,s3 (+10.0s..+16.0s): 2; kill-all s1,s2,s3 (+60.0s..+68.0s): 0\n",
		"chaos: work lost: job 3 instance 0 attempt 1 on stub1, last seen +12.0s, during pause-all",
		"chaos: PASS: no rule broken\n",
		"chaos: seed 1, 5 faults, 5 jobs (0 in dependency chains), 0 cron firings (0 run, 0 skipped), 0 lost, 0 doubled, 0 diverged, 0 out of dependency order, 0 cron firings missed or doubled, 2 work lost\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "job 5 ") {
		t.Errorf("report lists a stop of the isolated machine itself; want it counted only:\n%s", out)
	}
}
