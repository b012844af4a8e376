package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The group's command level is the lowest any server in the configuration
// announces, never above this build's; a server without a level, or one
// gossip never heard from, counts as 1.0.
func TestGroupLevel(t *testing.T) {
	servers := []raft.Server{{ID: "s0"}, {ID: "s1"}, {ID: "s2"}}
	at := func(level int) member {
		return member{Meta: client.NodeMeta{Role: client.RoleServer, Level: level}}
	}
	now := int(fsm.CommandLevel)
	tests := []struct {
		name string
		pool map[string]member
		want fsm.MessageType
	}{
		{"all current", map[string]member{"s0": at(now), "s1": at(now), "s2": at(now)}, fsm.CommandLevel},
		{"one at ChildEvents", map[string]member{"s0": at(now), "s1": at(19), "s2": at(now)}, fsm.ChildEventsType},
		{"one without a level counts as 1.0", map[string]member{"s0": at(now), "s1": at(0), "s2": at(now)}, oldestLevel},
		{"one never heard from counts as 1.0", map[string]member{"s0": at(now), "s1": at(now)}, oldestLevel},
		{"newer builds", map[string]member{"s0": at(now), "s1": at(now + 1), "s2": at(300)}, fsm.CommandLevel},
		{"a dead server keeps its level", map[string]member{"s0": at(now), "s1": at(now), "s2": {Alive: false, Meta: client.NodeMeta{Level: now}}}, fsm.CommandLevel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := groupLevel(servers, tc.pool); got != tc.want {
				t.Errorf("got level %v, want %v", got, tc.want)
			}
		})
	}
}

// Every server of the group applies the types of 1.0; a type above this
// build's level waits for every server to announce it.
func TestGroupApplies(t *testing.T) {
	var s Server
	s.groupLevel.Store(uint32(oldestLevel))
	tests := []struct {
		name string
		t    fsm.MessageType
		want bool
	}{
		{"Submits, 1.0's last type", fsm.SubmitsType, true},
		{"ChildEvents", fsm.ChildEventsType, true},
		{"a type after this build's", fsm.CommandLevel + 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.groupApplies(tc.t); got != tc.want {
				t.Errorf("got groupApplies(%v) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
}

// A CHILD_TERM's MachineFault goes into the log only once every server
// applies MachineHealth's level: a replica that predates the field would
// record a failure where the others queue the instance again.
func TestMachineFaultWaitsForTheGroup(t *testing.T) {
	ev := client.ChildEvent{Kind: client.ChildTerm, JobID: 1, Attempt: 1, Machine: "m1", ExitCode: 1,
		Error: "exec dir full: 0 B free", MachineFault: true}
	for _, tc := range []struct {
		name  string
		level fsm.MessageType
		want  bool
	}{
		{"a 1.0 server in the group", oldestLevel, false},
		{"every server at level 22", fsm.MachineHealthType, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Server
			s.groupLevel.Store(uint32(tc.level))
			e, err := childEvent(ev, s.groupApplies(fsm.MachineHealthType))
			if err != nil {
				t.Fatal(err)
			}
			if e.Term.MachineFault != tc.want {
				t.Errorf("got MachineFault %v, want %v", e.Term.MachineFault, tc.want)
			}
		})
	}
}

// A database with owner-policy settings is loaded only once every server
// applies fsm.FeatureOwnerSettings' level; one without them loads as before.
func TestOwnerSettingsWaitForTheGroup(t *testing.T) {
	plain := fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1"}}}
	owned := fsm.Database{Machines: []fsm.DeclaredMachine{{Name: "m1", Owner: map[string]string{"sleep_on_input": "15"}}}}
	for _, tc := range []struct {
		name  string
		level fsm.MessageType
		db    fsm.Database
		ok    bool
	}{
		{"no settings, a 1.0 server in the group", oldestLevel, plain, true},
		{"settings, a server of level 30 in the group", fsm.CronFireType, owned, false},
		{"settings, every server at their level", fsm.FeatureOwnerSettings.Level, owned, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Server
			s.groupLevel.Store(uint32(tc.level))
			err := checkOwnerSettings(tc.db, s.groupApplies)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, errUpgradeFirst) {
				t.Errorf("got %v, want errUpgradeFirst", err)
			}
		})
	}
}

// A database with a queue's kill_grace is loaded only once every server
// applies SubmitLimitsType; one without it loads as before.
func TestKillGraceWaitsForTheGroup(t *testing.T) {
	plain := fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "q", MaxRunSeconds: 60}}}
	graced := fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "q", MaxRunSeconds: 60, KillGraceSeconds: 30}}}
	for _, tc := range []struct {
		name  string
		level fsm.MessageType
		db    fsm.Database
		ok    bool
	}{
		{"no kill grace, a 1.0 server in the group", oldestLevel, plain, true},
		{"kill grace, a server of level 32 in the group", fsm.JobsExpireType, graced, false},
		{"kill grace, every server at 33", fsm.SubmitLimitsType, graced, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Server
			s.groupLevel.Store(uint32(tc.level))
			err := checkKillGrace(tc.db, s.groupApplies)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
			if err != nil && (!errors.Is(err, errUpgradeFirst) || !strings.Contains(err.Error(), "kill_grace on queue q")) {
				t.Errorf("got %v, want errUpgradeFirst naming the queue", err)
			}
		})
	}
}

// A database with a queue's placement policy is loaded only once every
// server applies SubmitGangType; one without it loads as before.
func TestPolicyWaitsForTheGroup(t *testing.T) {
	plain := fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "q"}}}
	gang := fsm.Database{Queues: []fsm.DeclaredQueue{{Name: "q", Policy: "gang"}}}
	for _, tc := range []struct {
		name  string
		level fsm.MessageType
		db    fsm.Database
		ok    bool
	}{
		{"no policy, a 1.0 server in the group", oldestLevel, plain, true},
		{"policy, a server of level 34 in the group", fsm.StubRestartingType, gang, false},
		{"policy, every server at 35", fsm.SubmitGangType, gang, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Server
			s.groupLevel.Store(uint32(tc.level))
			err := checkPolicy(tc.db, s.groupApplies)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
			if err != nil && (!errors.Is(err, errUpgradeFirst) || !strings.Contains(err.Error(), "policy=gang on queue q")) {
				t.Errorf("got %v, want errUpgradeFirst naming the queue", err)
			}
		})
	}
}
