package fsm_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

func TestUserBlobs(t *testing.T) {
	a := richState(t)
	// A second job of lena's with the same copy_in: the blob counts once.
	a.mustOK(fsm.SubmitFilesType, fsm.Submit{At: at(240), Owner: "lena", Spec: withFiles(spec("again", 1))})
	// Job 26's checkpoint counts too.
	want := map[string]int64{strings.Repeat("cd", 32): 4096, strings.Repeat("ab", 32): 10240, strings.Repeat("ef", 32): 2048}
	for _, tc := range []struct {
		owner string
		want  map[string]int64
	}{
		{"lena", want},
		{"alice", map[string]int64{}},
	} {
		t.Run(tc.owner, func(t *testing.T) {
			var got map[string]int64
			a.f.Read(func(v fsm.View) { got = v.UserBlobs(tc.owner) })
			if !maps.Equal(got, tc.want) {
				t.Errorf("UserBlobs(%q) = %v, want %v", tc.owner, got, tc.want)
			}
		})
	}
}
