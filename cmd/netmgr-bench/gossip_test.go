package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "4242 (netmgr) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 100 0 0", 3250 * time.Millisecond, false},
		{"name with spaces and parens", "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond, false},
		{"truncated", "7 (x) R 1 2", 0, true},
		{"no name", "garbage", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU(tt.stat)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStatCPU error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseStatCPU = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPerWindow(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	times := []time.Time{at(-1), at(0), at(999), at(1000), at(2500), at(2999), at(3000)}
	got := perWindow(times, start, 3*time.Second)
	if want := []float64{2, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("perWindow = %v, want %v", got, want)
	}
}

func TestCountSuspicions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.log")
	before := "level=INFO msg=\"memberlist: Suspect g0-1 has failed, no acks received\"\n"
	after := "level=INFO msg=\"memberlist: Suspect g0-2 has failed, no acks received\" machine=g1-0\n" +
		"level=INFO msg=\"memberlist: Marking g0-2 as failed, suspect timeout reached (2 peer confirmations)\"\n" +
		"level=INFO msg=\"lease renewed again\"\n"
	if err := os.WriteFile(path, []byte(before+after), 0o644); err != nil {
		t.Fatal(err)
	}
	sus, failed, err := countSuspicions(path, int64(len(before)))
	if err != nil || sus != 1 || failed != 1 {
		t.Errorf("countSuspicions = %d, %d, %v; want 1, 1, nil", sus, failed, err)
	}
}

func TestWatchStates(t *testing.T) {
	r := steadyResult{notUp: make(map[string]bool), states: make(map[string]int)}
	w := &watchStates{r: &r, since: make(map[string]time.Time)}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	poll := func(ms int, states ...string) {
		var machines []client.Machine
		for i, st := range states {
			machines = append(machines, client.Machine{Name: string(rune('a' + i)), State: st})
		}
		w.observe(machines, start.Add(time.Duration(ms)*time.Millisecond))
	}
	poll(0, "up", "up")
	poll(50, "suspect", "up")
	poll(100, "suspect", "up")
	poll(150, "up", "unreachable")
	poll(200, "suspect", "unreachable")
	w.close(start.Add(1000 * time.Millisecond))
	if got, want := r.episodes, 3; got != want {
		t.Errorf("episodes = %d, want %d", got, want)
	}
	if got, want := r.states, map[string]int{"suspect": 2, "unreachable": 1}; !maps.Equal(got, want) {
		t.Errorf("states = %v, want %v", got, want)
	}
	if got, want := len(r.notUp), 2; got != want {
		t.Errorf("machines not up = %d, want %d", got, want)
	}
	if got, want := r.longest, 850*time.Millisecond; got != want {
		t.Errorf("longest = %v, want %v", got, want)
	}
}

func TestParseNet(t *testing.T) {
	snmp := "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 1732725 11909 0 1752822 0\n" +
		"UdpLite: InDatagrams NoPorts InErrors OutDatagrams\nUdpLite: 1 2 3 4\n"
	if in, out := parseUDP(snmp); in != 1732725 || out != 1752822 {
		t.Errorf("parseUDP = %d, %d; want 1732725, 1752822", in, out)
	}
	dev := "Inter-|   Receive\n face |bytes    packets\n" +
		"  eth0: 100 2 0 0 0 0 0 0 300 4 0 0 0 0 0 0\n" +
		"    lo: 2063187093 5206967    0    0    0     0          0         0 2063187093 5206967 0 0 0 0 0 0\n"
	if got, want := parseLoBytes(dev), int64(2063187093); got != want {
		t.Errorf("parseLoBytes = %d, want %d", got, want)
	}
}
