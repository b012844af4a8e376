package matcher

import (
	"slices"
	"testing"
)

func TestCandidatesIgnoreStateButNotRequirements(t *testing.T) {
	machines := []MachineView{
		{Name: "a", Keys: []string{"sparc"}, Up: true, Awake: true, Slots: 1, Running: 1}, // full
		{Name: "b", Keys: []string{"sparc"}, Up: false, Awake: true, Slots: 1},            // down
		{Name: "c", Keys: []string{"mips"}, Up: true, Awake: true, Slots: 1},              // wrong key
		{Name: "d", Keys: []string{"sparc"}, Up: true, Awake: true, Slots: 1},             // free
	}
	p := NewPool(machines)
	got := New().Candidates(Request{JobID: 1, BinaryKeys: []string{"sparc"}}, p)
	if want := []int{0, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Candidates leaves the pool as it was: a match still sees d free.
	if res := New().MatchPool(Request{JobID: 1, BinaryKeys: []string{"sparc"}}, p); res.Machine != 3 {
		t.Errorf("after Candidates, match chose %d, want 3", res.Machine)
	}
}
