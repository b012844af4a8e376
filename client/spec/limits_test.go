package spec

import (
	"strings"
	"testing"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name, in   string
		wantTime   int64
		wantSignal string
		wantLead   int64
		wantErr    string
	}{
		{name: "minutes", in: "binaries={*=/bin/true},time=90", wantTime: 5400},
		{name: "seconds", in: "binaries={*=/bin/true},time=90s", wantTime: 90},
		{name: "hours", in: "binaries={*=/bin/true},time=2h", wantTime: 7200},
		{name: "signal with lead", in: "binaries={*=/bin/true},time=10m,signal=USR1@30", wantTime: 600, wantSignal: "USR1", wantLead: 30},
		{name: "signal by number", in: "binaries={*=/bin/true},signal=12@2m", wantSignal: "USR2", wantLead: 120},
		{name: "signal with SIG, default lead", in: "binaries={*=/bin/true},signal=sigterm", wantSignal: "TERM", wantLead: DefaultWarnLead},
		{name: "zero time", in: "binaries={*=/bin/true},time=0", wantErr: `option time: time limit: "0" is not a whole number`},
		{name: "bad unit", in: "binaries={*=/bin/true},time=3d", wantErr: `option time: time limit: "3d" is not`},
		{name: "uncatchable", in: "binaries={*=/bin/true},signal=KILL@10", wantErr: `option signal: signal "KILL": not a signal a job can be warned with`},
		{name: "unknown number", in: "binaries={*=/bin/true},signal=9", wantErr: `option signal: signal 9: not a signal`},
		{name: "bad lead", in: "binaries={*=/bin/true},signal=USR1@x", wantErr: `option signal: signal USR1@x: lead: "x" is not`},
		{name: "lead past the limit", in: "binaries={*=/bin/true},time=60s,signal=USR1@60", wantErr: `option signal: the warning 60s before the time limit comes before the job starts (time=1m)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got.TimeLimitS != tc.wantTime || got.WarnSignal != tc.wantSignal || got.WarnLeadS != tc.wantLead {
				t.Fatalf("Parse(%q) = time %d signal %q@%d, want %d %q@%d", tc.in, got.TimeLimitS, got.WarnSignal, got.WarnLeadS, tc.wantTime, tc.wantSignal, tc.wantLead)
			}
			again, err := Parse(Format(got))
			if err != nil || again.TimeLimitS != got.TimeLimitS || again.WarnSignal != got.WarnSignal || again.WarnLeadS != got.WarnLeadS {
				t.Fatalf("Parse(Format(%q)) = %+v, %v; want the same limits", Format(got), again, err)
			}
			if err := Validate(got); err != nil {
				t.Fatalf("Validate(%q): %v", tc.in, err)
			}
		})
	}
}
