package main

import (
	"bytes"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
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
