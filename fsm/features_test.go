package fsm_test

import (
	"slices"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// oldLadder is the entry-type choice submitCommand and
// batchSubmitCommand each wrote out before the feature table: the
// newest feature's type first.
func oldLadder(s *fsm.JobSpec) fsm.MessageType {
	switch {
	case s.HasFiles():
		return fsm.SubmitFilesType
	case s.Gang:
		return fsm.SubmitGangType
	case s.HasLimits():
		return fsm.SubmitLimitsType
	case s.Cron != "":
		return fsm.SubmitCronType
	case s.Dir != "":
		return fsm.SubmitDirType
	case s.HasDependencies():
		return fsm.SubmitAfterType
	}
	return fsm.SubmitType
}

// Every combination of the job features picks the entry type the old
// ladder picked, and asks for exactly the features it sets.
func TestSubmitEntryTypeKeepsTheLadder(t *testing.T) {
	set := []struct {
		name string
		f    fsm.Feature
		on   func(*fsm.JobSpec)
	}{
		{"files", fsm.FeatureFiles, func(s *fsm.JobSpec) { s.CopyOut = []string{"out"} }},
		{"gang", fsm.FeatureGang, func(s *fsm.JobSpec) { s.Gang = true }},
		{"limits", fsm.FeatureLimits, func(s *fsm.JobSpec) { s.TimeLimitSeconds = 60 }},
		{"mail", fsm.FeatureMail, func(s *fsm.JobSpec) { s.Mail = "a@example.org" }},
		{"cron", fsm.FeatureCron, func(s *fsm.JobSpec) { s.Cron = "@hourly" }},
		{"dir", fsm.FeatureDir, func(s *fsm.JobSpec) { s.Dir = "/tmp" }},
		{"after", fsm.FeatureDependencies, func(s *fsm.JobSpec) { s.After = []uint64{1} }},
	}
	for mask := range 1 << len(set) {
		var s fsm.JobSpec
		var want []fsm.Feature
		for i, x := range set {
			if mask&(1<<i) != 0 {
				x.on(&s)
				want = append(want, x.f)
			}
		}
		if got, old := fsm.SubmitEntryType(&s), oldLadder(&s); got != old {
			t.Errorf("features %07b: entry type %d, the ladder's %d", mask, got, old)
		}
		if got := s.Features(); !slices.Equal(got, want) {
			t.Errorf("features %07b: Features() = %v, want %v", mask, got, want)
		}
	}
}

// A feature's level is never below its entry type: the leader must not
// propose an entry type some server cannot apply.
func TestFeatureLevelsCoverTheirEntries(t *testing.T) {
	for _, f := range []fsm.Feature{fsm.FeatureFiles, fsm.FeatureGang, fsm.FeatureLimits, fsm.FeatureMail, fsm.FeatureCron,
		fsm.FeatureDir, fsm.FeatureDependencies, fsm.FeatureOwnerSettings, fsm.FeatureQueueKillGrace, fsm.FeatureQueuePolicy, fsm.FeatureQueuePreempt} {
		if f.Level < f.Entry || f.Level > fsm.CommandLevel || f.Name == "" {
			t.Errorf("%+v: level below its entry type, past CommandLevel, or no name", f)
		}
	}
}
