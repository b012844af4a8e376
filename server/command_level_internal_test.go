package server

import (
	"testing"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
)

// The group's command level is the lowest any server in the configuration
// announces, never above this build's; a server without a level, or one
// gossip never heard from, counts as the oldest.
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
		{"one old build", map[string]member{"s0": at(now), "s1": at(0), "s2": at(now)}, fsm.LeaderElectedType},
		{"one never heard from", map[string]member{"s0": at(now), "s1": at(now)}, fsm.LeaderElectedType},
		{"newer builds", map[string]member{"s0": at(now), "s1": at(40), "s2": at(300)}, fsm.CommandLevel},
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
