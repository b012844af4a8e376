package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestCheckDB(t *testing.T) {
	inst := func(state string) client.Instance { return client.Instance{State: state, Attempt: 2, Machine: "stub1"} }
	job := func(id uint64, restart string, states ...string) client.Job {
		j := client.Job{ID: id, Spec: client.JobSpec{Restart: restart}}
		for i, s := range states {
			in := inst(s)
			in.Index = i
			j.Instances = append(j.Instances, in)
		}
		return j
	}
	tests := []struct {
		name  string
		acks  []ack
		jobs  []client.Job
		want  []string
		notes int
	}{{
		name: "all there and done",
		acks: []ack{{ID: 1, Instances: 1}, {ID: 2, Instances: 2}},
		jobs: []client.Job{job(1, client.RestartNo, client.InstanceFailed), job(2, client.RestartAlways, client.InstanceExited, client.InstanceExited)},
	}, {
		name: "acknowledged job missing",
		acks: []ack{{ID: 1, Instances: 1}, {ID: 3, Instances: 1}},
		jobs: []client.Job{job(1, client.RestartNo, client.InstanceExited)},
		want: []string{"lost: job 3: acknowledged at"},
	}, {
		name: "restartable instance lost or unfinished",
		acks: []ack{{ID: 4, Instances: 3}},
		jobs: []client.Job{job(4, client.RestartOnFailure, client.InstanceExited, client.InstanceLost, client.InstanceRunning)},
		want: []string{
			"lost: job 4 instance 1: restart=on-failure but the instance ended lost",
			"lost: job 4 instance 2: restart=on-failure but the instance ended running",
		},
	}, {
		name:  "non-restartable lost is a note, not a violation",
		acks:  []ack{{ID: 5, Instances: 2}},
		jobs:  []client.Job{job(5, client.RestartNo, client.InstanceLost, client.InstanceRunning)},
		notes: 2,
	}, {
		name: "instance count differs",
		acks: []ack{{ID: 6, Instances: 2}},
		jobs: []client.Job{job(6, client.RestartNo, client.InstanceExited)},
		want: []string{"lost: job 6: submitted with 2 instances, the database has 1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[uint64]client.Job{}
			for _, j := range tt.jobs {
				m[j.ID] = j
			}
			vs, notes := checkDB(tt.acks, m)
			if len(vs) != len(tt.want) {
				t.Fatalf("got %d violations %v, want %d %q", len(vs), vs, len(tt.want), tt.want)
			}
			for i, v := range vs {
				if got := v.String(); !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("violation %d: got %q, want it to start with %q", i, got, tt.want[i])
				}
			}
			if len(notes) != tt.notes {
				t.Errorf("got notes %q, want %d", notes, tt.notes)
			}
		})
	}
}

func TestCompareViews(t *testing.T) {
	v := func(name string, index uint64, hash string) serverView {
		return serverView{Name: name, Index: index, Hash: hash}
	}
	tests := []struct {
		name  string
		views []serverView
		want  []string
	}{{
		name:  "agree",
		views: []serverView{v("s1", 9, "a"), v("s2", 9, "a"), v("s3", 9, "a")},
	}, {
		name:  "one differs at the same index",
		views: []serverView{v("s1", 9, "a"), v("s2", 9, "b"), v("s3", 9, "a")},
		want:  []string{"diverged: server s2 at index 9 has jobs hash b"},
	}, {
		name:  "one behind",
		views: []serverView{v("s1", 9, "a"), v("s2", 7, "c"), v("s3", 9, "a")},
		want:  []string{"diverged: server s2 is at index 7, others at 9"},
	}, {
		name:  "one unreachable",
		views: []serverView{v("s1", 9, "a"), {Name: "s2", Err: errors.New("refused")}, v("s3", 9, "a")},
		want:  []string{"diverged: server s2: could not read its jobs: refused"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := compareViews(tt.views)
			if len(vs) != len(tt.want) {
				t.Fatalf("got %v, want %q", vs, tt.want)
			}
			for i, v := range vs {
				if got := v.String(); !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("got %q, want it to start with %q", got, tt.want[i])
				}
			}
		})
	}
}

func TestHashJobsIgnoresOrder(t *testing.T) {
	a := []client.Job{{ID: 1, Name: "x"}, {ID: 2, Name: "y"}}
	b := []client.Job{a[1], a[0]}
	ha, err := hashJobs(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := hashJobs(b)
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb {
		t.Errorf("got hashes %s and %s for the same jobs, want equal", ha, hb)
	}
	c := []client.Job{{ID: 1, Name: "x"}, {ID: 2, Name: "z"}}
	if hc, _ := hashJobs(c); hc == ha {
		t.Errorf("got the same hash %s for different jobs, want different", hc)
	}
}
