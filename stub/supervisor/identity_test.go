package supervisor

import (
	"errors"
	"os"
	"testing"
)

func TestIdentity(t *testing.T) {
	self, err := identify(os.Getpid())
	if err != nil {
		t.Fatalf("identify: %v", err)
	}
	if self.StartTime == 0 || self.BootID == "" {
		t.Fatalf("identify = %+v, want a start time and a boot id", self)
	}
	tests := []struct {
		name string
		id   procIdentity
		ok   bool
	}{
		{name: "self", id: self, ok: true},
		{name: "other start time", id: procIdentity{PID: self.PID, StartTime: self.StartTime + 1, BootID: self.BootID}},
		{name: "other boot", id: procIdentity{PID: self.PID, StartTime: self.StartTime, BootID: "x"}},
		{name: "no pid", id: procIdentity{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.id.verify()
			if got := err == nil; got != tt.ok {
				t.Errorf("verify = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, errProcessGone) {
				t.Errorf("verify = %v, want errProcessGone", err)
			}
		})
	}
}
