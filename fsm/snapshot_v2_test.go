package fsm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// readV2 reads the version 2 golden: the rich state's snapshot as format 2
// wrote it, before queues were filed and reservations existed (kept as it
// was).
func readV2(t *testing.T) []byte {
	t.Helper()
	old, err := os.ReadFile(filepath.Join("testdata", "snapshot_v2.golden"))
	if err != nil {
		t.Fatalf("read version 2 snapshot: %v", err)
	}
	if !bytes.HasPrefix(old, []byte(`{"format":"netmgr-fsm","version":2,`)) {
		t.Fatalf("testdata/snapshot_v2.golden is not a version 2 snapshot: %.80s", old)
	}
	return old
}

// jobQueue matches the queue field format 3 writes after a job's owner.
var jobQueue = regexp.MustCompile(`("owner":"[^"]*"),"queue":"[^"]*",`)

// TestRestoreVersion2 restores a snapshot written before reservations
// existed: it restores with none, reservation ids start at 1, every job is
// filed in a queue, and snapshotting it again writes the current version
// with the same database, machines and jobs.
func TestRestoreVersion2(t *testing.T) {
	old := readV2(t)
	f := restored(t, old)
	var rs int
	var queues []string
	f.Read(func(v fsm.View) {
		rs = len(v.Reservations())
		for _, q := range v.Queues() {
			queues = append(queues, q.Name)
		}
		for _, j := range v.Jobs() {
			if j.Queue == "" {
				t.Errorf("job %d restored without a queue", j.ID)
			}
		}
	})
	if rs != 0 {
		t.Errorf("got %d reservations, want none", rs)
	}
	if want := "default NEW_Q"; strings.Join(queues, " ") != want {
		t.Errorf("got queues %v, want %s", queues, want)
	}

	rendered := jsonSnapshot(t, f)
	oldLines := bytes.SplitAfter(old, []byte("\n"))
	newLines := bytes.SplitAfter(rendered, []byte("\n"))
	if len(newLines) != len(oldLines) {
		t.Fatalf("got %d lines, want %d", len(newLines), len(oldLines))
	}
	wantHeader := strings.Replace(string(oldLines[0]), `"version":2`, `"version":4`, 1)
	wantHeader = strings.Replace(wantHeader, "}\n", `,"next_reservation_id":1}`+"\n", 1)
	if got := string(newLines[0]); got != wantHeader {
		t.Errorf("got header %s, want %s", got, wantHeader)
	}
	upgraded := bytes.Join(newLines[1:], nil)
	if n := len(jobQueue.FindAll(upgraded, -1)); n != 7 {
		t.Errorf("got %d jobs filed in a queue, want 7", n)
	}
	upgraded = jobQueue.ReplaceAll(upgraded, []byte("$1,"))
	if want := bytes.Join(oldLines[1:], nil); !bytes.Equal(upgraded, want) {
		t.Errorf("records changed by the version upgrade:\ngot:\n%s\nwant:\n%s", upgraded, want)
	}
	// The current version round-trips from here on.
	again := snapshotBytes(t, f)
	if twice := snapshotBytes(t, restored(t, again)); !bytes.Equal(twice, again) {
		t.Errorf("upgraded snapshot does not round-trip:\ngot:\n%s\nwant:\n%s", jsonSnapshot(t, restored(t, twice)), jsonSnapshot(t, restored(t, again)))
	}

	// The restored state takes the new commands.
	a := &applier{tb: t, f: f, next: 36}
	if res := a.mustOK(fsm.ReserveType, fsm.Reserve{At: at(200), Owner: "erin", Machines: []string{"m1"}, From: at(200), Until: at(300)}); res.ReservationID != 1 {
		t.Errorf("first reservation: got id %d, want 1", res.ReservationID)
	}
	if res := a.placeAt(at(250), asg(6, 0, "m1"), asg(6, 1, "m2")); len(res.Accepted) != 2 {
		t.Errorf("erin's job on her reserved machine: got Accepted %v, want both", res.Accepted)
	}
	if res := a.control(fsm.RestartJobType, 6); res.Err != nil || res.Affected != 2 {
		t.Errorf("restart: got Err %v Affected %d, want nil and 2", res.Err, res.Affected)
	}
	a.setQueue(fsm.DeclaredQueue{Name: "late", MaxActive: 1})
	if got := queueNames(a.f); strings.Join(got, " ") != "default NEW_Q late" {
		t.Errorf("got queues %v, want default NEW_Q late", got)
	}
}

// TestRestoreVersion2SpecQueue: a job recorded by format 2 whose spec named
// a queue is filed in that queue on restore, as the same Submit replayed
// from the log files it; otherwise a restored replica and a replaying one
// disagree about the job's queue and its limits.
func TestRestoreVersion2SpecQueue(t *testing.T) {
	f := restored(t, readV2(t))
	var queueName, specQueue string
	f.Read(func(v fsm.View) {
		j, ok := v.JobByName("flaky")
		if !ok {
			t.Fatalf("job flaky not found")
		}
		queueName, specQueue = j.Queue, j.Spec.Queue
	})
	if specQueue != "NEW_Q" {
		t.Fatalf("got spec queue %q, want NEW_Q (golden changed?)", specQueue)
	}
	if queueName != specQueue {
		t.Errorf("got job filed in queue %q, want %q (its spec's queue)", queueName, specQueue)
	}
	// The log replayed files it in NEW_Q.
	if want := "NEW_Q"; richState(t).job(7).Queue != want {
		t.Errorf("replayed: got queue %q, want %q", richState(t).job(7).Queue, want)
	}
}
