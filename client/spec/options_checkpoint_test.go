package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestParseCheckpoint(t *testing.T) {
	s, err := Parse(`binaries={*=/bin/sim}, checkpoint={state,run.dat}, checkpoint_exit=85`)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := client.JobSpec{Binaries: map[string]string{"*": "/bin/sim"}, Checkpoint: []string{"state", "run.dat"}, CheckpointExit: 85}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	again, err := Parse(Format(s))
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Fatalf("Parse(Format) = %+v, %v; Format wrote %s", again, err, Format(s))
	}
}

func TestParseCheckpointErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`binaries={*=/bin/x}, checkpoint=state, checkpoint_exit=0`, "from 1 to 255"},
		{`binaries={*=/bin/x}, checkpoint=state, checkpoint_exit=256`, "from 1 to 255"},
		{`binaries={*=/bin/x}, checkpoint=state`, "needs option checkpoint_exit"},
		{`binaries={*=/bin/x}, checkpoint_exit=85`, "needs option checkpoint"},
		{`binaries={*=/bin/x}, checkpoint=/etc/passwd, checkpoint_exit=85`, "checkpoint"},
	} {
		if _, err := Parse(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.src, err, c.want)
		}
	}
}
