package main

import (
	"bytes"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func testTopology(t *testing.T) topology {
	t.Helper()
	topo, err := newTopology(config{servers: 5, stubs: 6, portBase: 14646, subnet: netip.MustParsePrefix("172.28.213.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestGenerateIsSeededAndValid(t *testing.T) {
	topo := testTopology(t)
	for _, seed := range []int64{1, 2, 3, 42, 1234567} {
		a := generate(seed, 30*time.Minute, 5, 6)
		b := generate(seed, 30*time.Minute, 5, 6)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two schedules differ", seed)
		}
		if len(a.Faults) < 50 {
			t.Errorf("seed %d: got %d faults in 30m, want at least 50", seed, len(a.Faults))
		}
		if err := a.validate(topo); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		for _, f := range a.Faults {
			if f.At+f.For > a.Duration {
				t.Errorf("seed %d: %s ends after the duration", seed, f)
			}
		}
	}
	if reflect.DeepEqual(generate(1, 30*time.Minute, 5, 6), generate(2, 30*time.Minute, 5, 6)) {
		t.Errorf("seeds 1 and 2 give the same schedule, want different")
	}
}

func TestScheduleRoundTrip(t *testing.T) {
	sc := generate(99, 10*time.Minute, 5, 6)
	var buf bytes.Buffer
	buf.WriteString("chaos: seed 99\nsome other output\n")
	sc.write(&buf, "chaos:   ")
	got, err := parseSchedule(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sc) {
		t.Errorf("got %+v, want %+v", got, sc)
	}
}

func TestParseScheduleErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"no seed", "duration 1m\n", "want a seed and a duration"},
		{"unknown kind", "seed 1\nduration 1m\nfault +5s melt for 1s s1\n", `unknown fault kind "melt"`},
		{"leader with target", "seed 1\nduration 1m\nfault +5s kill-leader for 1s s1\n", "takes no target"},
		{"bad time", "seed 1\nduration 1m\nfault +x kill-stub for 1s stub1\n", "fault time"},
		{"stub fault without target", "seed 1\nduration 1m\nfault +5s pause-stub for 1s\n", "exactly one target"},
		{"kill-all with target", "seed 1\nduration 1m\nfault +5s kill-all for 5s s1\n", "takes no target: it takes every server"},
		{"isolate-stub with two targets", "seed 1\nduration 1m\nfault +5s isolate-stub for 5s stub1 stub2\n", "takes one stub, or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSchedule(strings.NewReader(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateRefusesMajority(t *testing.T) {
	topo := testTopology(t)
	sc := schedule{Seed: 1, Duration: time.Minute, Faults: []fault{
		{At: 10 * time.Second, Kind: faultKillServers, For: 10 * time.Second, Targets: []string{"s1", "s2"}},
		{At: 15 * time.Second, Kind: faultPauseServer, For: 10 * time.Second, Targets: []string{"s3"}},
	}}
	if err := sc.validate(topo); err == nil || !strings.Contains(err.Error(), "a majority") {
		t.Errorf("got %v, want a majority error", err)
	}
	sc.Faults[1].Kind, sc.Faults[1].Targets = faultPauseStub, []string{"stub1"}
	if err := sc.validate(topo); err != nil {
		t.Errorf("got %v for a server and a stub fault, want nil", err)
	}
	sc.Faults[1].Targets = []string{"stub9"}
	if err := sc.validate(topo); err == nil {
		t.Errorf("got nil for an unknown stub, want an error")
	}
}

// TestCIScheduleHasTheOpening checks what CI runs (make chaos
// DURATION=90s CHAOS_FLAGS='-seed 1') and any other seed at 90 s: every
// whole-control-plane fault and an isolated stub, in the opening's order,
// the kill-all no longer than 10 s, all over by the end.
func TestCIScheduleHasTheOpening(t *testing.T) {
	topo := testTopology(t)
	for seed := int64(1); seed <= 50; seed++ {
		sc := generate(seed, 90*time.Second, 5, 6)
		if err := sc.validate(topo); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		var kinds []string
		for _, f := range sc.Faults {
			if !slices.Contains(serverFaults, f.Kind) {
				kinds = append(kinds, f.Kind)
			}
			if f.At+f.For > sc.Duration {
				t.Errorf("seed %d: %s ends after the duration", seed, f)
			}
			if f.Kind == faultKillAll && f.For > 10*time.Second {
				t.Errorf("seed %d: %s: want the CI run's kill-all for 10 s at most", seed, f)
			}
		}
		if len(kinds) < len(opening) || !slices.Equal(kinds[:len(opening)], opening) {
			t.Errorf("seed %d: got the faults %v besides the minority server faults, want them to open with %v", seed, kinds, opening)
		}
	}
}

func TestOpeningCompanionStaysInsideTheIsolation(t *testing.T) {
	for seed := int64(1); seed <= 50; seed++ {
		sc := generate(seed, 90*time.Second, 5, 6)
		i := slices.IndexFunc(sc.Faults, func(f fault) bool { return f.Kind == faultIsolateStub })
		if i < 0 || i+1 >= len(sc.Faults) {
			t.Fatalf("seed %d: no isolate-stub followed by its companion in %v", seed, sc.Faults)
		}
		iso, g := sc.Faults[i], sc.Faults[i+1]
		if !slices.Contains(serverFaults, g.Kind) {
			t.Errorf("seed %d: companion %s is not a minority server fault", seed, g)
		}
		if g.At < iso.At || g.At+g.For > iso.At+iso.For {
			t.Errorf("seed %d: companion %s reaches outside %s", seed, g, iso)
		}
	}
}

func TestLongScheduleDrawsEveryKind(t *testing.T) {
	topo := testTopology(t)
	for _, seed := range []int64{1, 2, 3} {
		sc := generate(seed, 2*time.Hour, 5, 6)
		if err := sc.validate(topo); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		seen := map[string]int{}
		for _, f := range sc.Faults {
			seen[f.Kind]++
		}
		for _, k := range allFaults() {
			if seen[k] == 0 {
				t.Errorf("seed %d: no %s in 2 hours (%v)", seed, k, seen)
			}
		}
		for _, f := range sc.Faults[len(opening)+1:] {
			if f.Kind == faultKillAll && f.For > maxKillAll {
				t.Errorf("seed %d: %s longer than maxKillAll", seed, f)
			}
		}
	}
}

func TestValidateControlPlaneFaultsRunAlone(t *testing.T) {
	topo := testTopology(t)
	tests := []struct {
		name   string
		faults []fault
		want   string // "" for valid
	}{
		{"kill-all alone is no majority error", []fault{
			{At: 10 * time.Second, Kind: faultKillAll, For: 10 * time.Second},
		}, ""},
		{"pause-all then a stub fault after it", []fault{
			{At: 10 * time.Second, Kind: faultPauseAll, For: 5 * time.Second},
			{At: 16 * time.Second, Kind: faultIsolateStub, For: 5 * time.Second, Targets: []string{"stub2"}},
		}, ""},
		{"a stub fault during cut-stubs", []fault{
			{At: 10 * time.Second, Kind: faultCutStubs, For: 10 * time.Second},
			{At: 15 * time.Second, Kind: faultRestartStub, Targets: []string{"stub1"}},
		}, "runs alone"},
		{"a server fault into kill-all", []fault{
			{At: 5 * time.Second, Kind: faultPauseServer, For: 10 * time.Second, Targets: []string{"s1"}},
			{At: 10 * time.Second, Kind: faultKillAll, For: 10 * time.Second},
		}, "runs alone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schedule{Seed: 1, Duration: time.Minute, Faults: tt.faults}.validate(topo)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseIsolateStubTarget(t *testing.T) {
	sc, err := parseSchedule(strings.NewReader("seed 1\nduration 1m\nfault +5s isolate-stub for 5s\nfault +20s isolate-stub for 5s stub4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := [][]string{sc.Faults[0].Targets, sc.Faults[1].Targets}; !reflect.DeepEqual(got, [][]string{nil, {"stub4"}}) {
		t.Errorf("got targets %q, want none (the busiest) and stub4", got)
	}
}

func TestBusiest(t *testing.T) {
	stubs := testTopology(t).Stubs
	running := func(machine string) client.Instance {
		return client.Instance{State: client.InstanceRunning, Machine: machine}
	}
	jobs := []client.Job{
		{ID: 1, Spec: client.JobSpec{Restart: client.RestartNo}, Instances: []client.Instance{running("stub2"), running("stub2"), running("stub2")}},
		{ID: 2, Spec: client.JobSpec{Restart: client.RestartAlways}, Instances: []client.Instance{running("stub4"), running("stub5")}},
		{ID: 3, Spec: client.JobSpec{Restart: client.RestartOnFailure}, Instances: []client.Instance{
			running("stub5"), {State: client.InstanceExited, Machine: "stub4"}, {State: client.InstanceExited, Machine: "stub4"}}},
	}
	if got := busiest(jobs, stubs).Name; got != "stub5" {
		t.Errorf("got %s, want stub5 (two running restartable instances; stub2's are not restartable)", got)
	}
	if got := busiest(nil, stubs).Name; got != "stub1" {
		t.Errorf("with no jobs got %s, want stub1", got)
	}
}
