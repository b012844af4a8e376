package server

import (
	"strings"
	"testing"
	"time"
)

// TestRestartGraceValidated: a restart grace outside [0, MaxRestartGrace]
// stops the server at start with the option named.
func TestRestartGraceValidated(t *testing.T) {
	for _, grace := range []time.Duration{-time.Second, MaxRestartGrace + time.Second} {
		c := Config{Name: "s1", InmemStore: true, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", RestartGrace: grace}
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "--restart-grace must be between 0 and 10m0s") {
			t.Errorf("restart grace %v: %v, want the option named", grace, err)
		}
	}
	c := Config{Name: "s1", InmemStore: true, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", GossipAddr: "127.0.0.1:0", RestartGrace: DefaultRestartGrace}
	if err := c.validate(); err != nil {
		t.Errorf("the default restart grace: %v", err)
	}
}
