package fsm_test

import (
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// TestMachinesSortedKeptAndRenewed checks the order View.Machines keeps
// between reads: a machine added after a read is in the next one, in its
// place; a replica restored over a state it had read reads the restored
// machines; and what a caller does to the slice it got changes nothing.
func TestMachinesSortedKeptAndRenewed(t *testing.T) {
	names := func(f *fsm.FSM) (out []string) {
		f.Read(func(v fsm.View) {
			ms := v.Machines()
			for _, m := range ms {
				out = append(out, m.Name)
			}
			slices.Reverse(ms) // the caller's own slice
		})
		return out
	}
	a := newApplier(t)
	a.join("m2", "x86_64", 1)
	a.join("m0", "x86_64", 1)
	if got := names(a.f); !slices.Equal(got, []string{"m0", "m2"}) {
		t.Fatalf("machines = %v, want [m0 m2]", got)
	}
	a.join("m1", "x86_64", 1)
	a.join("m0", "x86_64", 2) // a join again adds nothing
	if got := names(a.f); !slices.Equal(got, []string{"m0", "m1", "m2"}) {
		t.Fatalf("after m1 joined: machines = %v, want [m0 m1 m2]", got)
	}
	if got := names(a.f); !slices.Equal(got, []string{"m0", "m1", "m2"}) {
		t.Fatalf("read again: machines = %v, want [m0 m1 m2]", got)
	}

	b := newApplier(t)
	b.join("z9", "x86_64", 1)
	if got := names(b.f); !slices.Equal(got, []string{"z9"}) {
		t.Fatalf("machines = %v, want [z9]", got)
	}
	if err := restoreInto(b.f, snapshotBytes(t, a.f)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := names(b.f); !slices.Equal(got, []string{"m0", "m1", "m2"}) {
		t.Fatalf("restored: machines = %v, want [m0 m1 m2]", got)
	}
}
