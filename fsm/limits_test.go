package fsm_test

import (
	"errors"
	"testing"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/queue"
)

// TestSubmitLimits checks the job's own time limit and warning at submit:
// within the queue's nq_maxrun, a warning only with a time limit that
// leaves room for it, refused with the queue's limit named and the state
// unchanged; accepted ones are recorded in the spec.
func TestSubmitLimits(t *testing.T) {
	tests := []struct {
		name       string
		queue      string
		timeS      int64
		sig        string
		leadS      int64
		wantErr    error
		wantMsg    string
		wantRecord bool
	}{
		{name: "time within nq_maxrun", queue: "short", timeS: 600, wantRecord: true},
		{name: "time at nq_maxrun", queue: "short", timeS: 3600, wantRecord: true},
		{name: "time over nq_maxrun", queue: "short", timeS: 3660, wantErr: queue.ErrTimeOverLimit,
			wantMsg: "job asks a time limit of 61m but queue short allows 1h (nq_maxrun=60); ask for time=60 or less, or use another queue"},
		{name: "time without a queue limit", queue: "", timeS: 7 * 24 * 3600, wantRecord: true},
		{name: "warning before the job's limit", queue: "", timeS: 600, sig: "USR1", leadS: 60, wantRecord: true},
		{name: "warning before the queue's limit", queue: "short", sig: "USR2", leadS: 300, wantRecord: true},
		{name: "warning without any limit", queue: "", sig: "USR1", leadS: 60, wantErr: queue.ErrNoTimeLimit,
			wantMsg: "signal= warns 1m before the time limit, but the job has none (time=) and queue default has no nq_maxrun; give time="},
		{name: "warning longer than the limit", queue: "short", timeS: 60, sig: "USR1", leadS: 60, wantErr: queue.ErrNoTimeLimit,
			wantMsg: "signal= warns 1m before a time limit of 1m (the job's time=): the warning would come before the job starts"},
		{name: "negative time", queue: "", timeS: -1, wantErr: fsm.ErrInvalidSpec},
		{name: "a lead without a signal", queue: "", timeS: 600, leadS: 60, wantErr: fsm.ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.setQueue(fsm.DeclaredQueue{Name: "short", MaxRunSeconds: 3600})
			before := stateBytes(t, a.f)
			s := spec("limited", 1)
			s.Queue, s.TimeLimitSeconds, s.WarnSignal, s.WarnLeadSeconds = tc.queue, tc.timeS, tc.sig, tc.leadS
			res := a.apply(fsm.SubmitLimitsType, fsm.Submit{At: at(1), Owner: "alice", Spec: s})
			if tc.wantErr != nil {
				if !errors.Is(res.Err, tc.wantErr) {
					t.Fatalf("got error %v, want %v", res.Err, tc.wantErr)
				}
				if tc.wantMsg != "" && res.Err.Error() != tc.wantMsg {
					t.Errorf("got message %q, want %q", res.Err.Error(), tc.wantMsg)
				}
				assertUnchanged(t, a.f, before)
				return
			}
			if res.Err != nil {
				t.Fatalf("got error %v, want none", res.Err)
			}
			j := a.job(res.JobID)
			if got := j.Spec; got.TimeLimitSeconds != tc.timeS || got.WarnSignal != tc.sig || got.WarnLeadSeconds != tc.leadS {
				t.Errorf("recorded time %d warning %q@%d, want %d %q@%d", got.TimeLimitSeconds, got.WarnSignal, got.WarnLeadSeconds, tc.timeS, tc.sig, tc.leadS)
			}
		})
	}
}

// TestEffectiveRun checks the run limit an attempt gets: the smaller of
// the queue's and the job's.
func TestEffectiveRun(t *testing.T) {
	for _, tc := range []struct {
		name         string
		queueS, jobS int64
		wantS        int64
	}{
		{"neither", 0, 0, 0},
		{"queue only", 3600, 0, 3600},
		{"job only", 0, 600, 600},
		{"job under queue", 3600, 600, 600},
		{"queue under job", 600, 3600, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fsm.DeclaredQueue{MaxRunSeconds: tc.queueS}.Limits().EffectiveRun(tc.jobS)
			if got.Seconds() != float64(tc.wantS) {
				t.Errorf("got %v, want %ds", got, tc.wantS)
			}
		})
	}
}
