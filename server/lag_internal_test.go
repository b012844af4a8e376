package server

import "testing"

func TestLagOf(t *testing.T) {
	tests := []struct {
		name               string
		last, commit, prev uint64
		behind             uint64
		caughtUp           bool
	}{
		{"holds every commit", 100, 100, 90, 0, true},
		{"ahead of the commit index", 101, 100, 90, 0, true},
		{"lacks only new commits", 95, 100, 90, 0, false},
		{"lacks commits of a round ago", 80, 100, 90, 20, false},
		{"first round", 80, 100, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			behind, caughtUp := lagOf(tt.last, tt.commit, tt.prev)
			if behind != tt.behind || caughtUp != tt.caughtUp {
				t.Errorf("lagOf(%d, %d, %d) = %d, %v; want %d, %v", tt.last, tt.commit, tt.prev, behind, caughtUp, tt.behind, tt.caughtUp)
			}
		})
	}
}
