package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func TestParseFrom(t *testing.T) {
	zone := time.FixedZone("CET", 3600)
	now := time.Date(2026, 3, 4, 13, 30, 15, 0, zone)
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantErr string
	}{
		{name: "now", in: "now", want: now},
		{name: "relative minutes", in: "+30m", want: now.Add(30 * time.Minute)},
		{name: "relative compound", in: "+1h30m", want: now.Add(90 * time.Minute)},
		{name: "relative zero", in: "+0s", want: now},
		{name: "later today", in: "14:00", want: time.Date(2026, 3, 4, 14, 0, 0, 0, zone)},
		{name: "single digit hour tomorrow", in: "9:05", want: time.Date(2026, 3, 5, 9, 5, 0, 0, zone)},
		{name: "passed today means tomorrow", in: "13:30", want: time.Date(2026, 3, 5, 13, 30, 0, 0, zone)},
		{name: "midnight", in: "00:00", want: time.Date(2026, 3, 5, 0, 0, 0, 0, zone)},
		{name: "last minute of today", in: "23:59", want: time.Date(2026, 3, 4, 23, 59, 0, 0, zone)},
		{name: "rfc3339 utc", in: "2026-03-04T18:00:00Z", want: time.Date(2026, 3, 4, 18, 0, 0, 0, time.UTC)},
		{name: "rfc3339 offset", in: "2026-03-05T08:00:00+01:00", want: time.Date(2026, 3, 5, 8, 0, 0, 0, zone)},
		{name: "spaces", in: " 14:00 ", want: time.Date(2026, 3, 4, 14, 0, 0, 0, zone)},
		{name: "rfc3339 past", in: "2026-03-04T12:00:00Z", wantErr: "--from: 2026-03-04T12:00:00Z is in the past"},
		{name: "negative relative", in: "+-5m", wantErr: `--from: "+-5m" is not +DURATION`},
		{name: "relative without unit", in: "+30", wantErr: `--from: "+30" is not +DURATION`},
		{name: "hour out of range", in: "24:00", wantErr: `--from: "24:00" is not a time`},
		{name: "minute out of range", in: "12:60", wantErr: `--from: "12:60" is not a time`},
		{name: "seconds", in: "12:00:00", wantErr: `--from: "12:00:00" is not a time`},
		{name: "words", in: "tomorrow", wantErr: `--from: "tomorrow" is not a time`},
		{name: "empty", in: "", wantErr: `--from: "" is not a time`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFrom(tt.in, now)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("parseFrom(%q) error = %v, want prefix %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFrom(%q) error = %v", tt.in, err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("parseFrom(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseRequire(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want client.JobSpec
	}{
		{"keys and comparison", "keys={mathlab},mem>10", client.JobSpec{Keys: []string{"mathlab"},
			Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}}}},
		{"every requirement", "mounts={/usr/u/fred/data}, rating>=8, machines={flute,viola}, keys={fpu,sparc}", client.JobSpec{
			Keys: []string{"fpu", "sparc"}, Mounts: []string{"/usr/u/fred/data"}, Machines: []string{"flute", "viola"},
			Requirements: []client.Requirement{{Attr: "rating", Op: ">=", Value: 8}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRequire(tt.in)
			if err != nil {
				t.Fatalf("parseRequire(%q) error = %v", tt.in, err)
			}
			if !equalSpec(*got, tt.want) {
				t.Errorf("parseRequire(%q) = %#v, want %#v", tt.in, *got, tt.want)
			}
		})
	}
}

func TestReserveAgainstFakeServer(t *testing.T) {
	// Times the server answers with are printed in local time; build them
	// from local clock readings so that the test holds in any zone.
	now := time.Now()
	at := func(hh, mm int, days int) time.Time {
		y, m, d := now.Date()
		return time.Date(y, m, d+days, hh, mm, 0, 0, time.Local)
	}
	window := client.Reservation{ID: 3, Owner: "root", Machines: []string{"flute", "viola"}, From: at(14, 0, 0), Until: at(16, 0, 0)}
	open := client.Reservation{ID: 4, Owner: "root", Machines: []string{"tuba"}, From: at(14, 0, 0)}
	tests := []struct {
		name   string
		resp   client.Reservation
		args   []string
		stdout string
		check  func(t *testing.T, req client.ReserveRequest)
	}{
		{
			name: "machines", resp: window,
			args:   []string{"reserve", "flute", "viola"},
			stdout: "reservation 3: flute, viola for root from 14:00 until 16:00\n",
			check: func(t *testing.T, req client.ReserveRequest) {
				if got, want := strings.Join(req.Machines, ","), "flute,viola"; got != want {
					t.Errorf("machines = %q, want %q", got, want)
				}
				if req.N != 0 || req.Require != nil || !req.From.IsZero() || req.For != 0 {
					t.Errorf("request = %+v, want only machines", req)
				}
			},
		},
		{
			name: "n with requirements and a window", resp: window,
			args:   []string{"netmgr", "reserve", "-n", "2", "--require", "keys={mathlab},mem>10", "--from", "+30m", "--for", "2h"},
			stdout: "reservation 3: flute, viola for root from 14:00 until 16:00\n",
			check: func(t *testing.T, req client.ReserveRequest) {
				if req.N != 2 || len(req.Machines) != 0 {
					t.Errorf("n = %d, machines = %q, want 2 and none", req.N, req.Machines)
				}
				want := client.JobSpec{Keys: []string{"mathlab"}, Requirements: []client.Requirement{{Attr: "mem", Op: ">", Value: 10}}}
				if req.Require == nil || !equalSpec(*req.Require, want) {
					t.Errorf("require = %+v, want %+v", req.Require, want)
				}
				if req.For != 2*time.Hour {
					t.Errorf("for = %v, want 2h", req.For)
				}
				if d := time.Until(req.From); d < 29*time.Minute || d > 30*time.Minute {
					t.Errorf("from = %v, want about 30m from now", req.From)
				}
			},
		},
		{
			name: "options after the machines", resp: window,
			args:   []string{"netmgr", "reserve", "flute", "--for", "2h", "viola"},
			stdout: "reservation 3: flute, viola for root from 14:00 until 16:00\n",
			check: func(t *testing.T, req client.ReserveRequest) {
				if got, want := strings.Join(req.Machines, ","), "flute,viola"; got != want || req.For != 2*time.Hour {
					t.Errorf("machines = %q, for = %v, want %q and 2h", got, req.For, want)
				}
			},
		},
		{
			name: "n alone until unreserved", resp: open,
			args:   []string{"reserve", "-n", "1"},
			stdout: "reservation 4: tuba for root from 14:00 until unreserved\n",
			check: func(t *testing.T, req client.ReserveRequest) {
				if req.N != 1 || req.Require != nil {
					t.Errorf("request = %+v, want n 1 without requirements", req)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{reservation: tt.resp}
			t.Setenv(envAddr, f.start(t))
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, tt.stdout)
			}
			if len(f.reserves) != 1 {
				t.Fatalf("got %d reserve requests, want 1", len(f.reserves))
			}
			tt.check(t, f.reserves[0])
		})
	}
}

func TestReserveRequestOnTheWire(t *testing.T) {
	f := &fakeServer{}
	t.Setenv(envAddr, f.start(t))
	code, _, stderr := runCLI(t, "reserve", "-n", "3", "--require", "keys={fpu}")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	b, err := json.Marshal(f.reserves[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"n":3,"require":{"binaries":null,"keys":["fpu"]}}`; got != want {
		t.Errorf("request = %s, want %s", got, want)
	}
}

func TestUnreserveAgainstFakeServer(t *testing.T) {
	now := time.Now()
	y, m, d := now.Date()
	ended := []client.Reservation{
		{ID: 5, Owner: "root", Machines: []string{"harp"}, From: time.Date(y, m, d, 9, 0, 0, 0, time.Local)},
		{ID: 3, Owner: "root", Machines: []string{"flute", "viola"}, From: time.Date(y, m, d, 14, 0, 0, 0, time.Local),
			Until: time.Date(y, m, d, 16, 0, 0, 0, time.Local)},
	}
	tests := []struct {
		name   string
		ended  []client.Reservation
		args   []string
		code   int
		stdout string
		stderr string
		want   client.UnreserveRequest
	}{
		{
			name: "all", ended: ended, args: []string{"unreserve"},
			stdout: "ended reservation 3: flute, viola for root from 14:00 until 16:00\nended reservation 5: harp for root from 09:00 until unreserved\n",
		},
		{
			name: "by machine", ended: ended[1:], args: []string{"unreserve", "flute"},
			stdout: "ended reservation 3: flute, viola for root from 14:00 until 16:00\n",
			want:   client.UnreserveRequest{Machines: []string{"flute"}},
		},
		{
			name: "by id", ended: ended[:1], args: []string{"netmgr", "unreserve", "--id", "5"},
			stdout: "ended reservation 5: harp for root from 09:00 until unreserved\n",
			want:   client.UnreserveRequest{ID: 5},
		},
		{
			name: "none held", args: []string{"unreserve"},
			stdout: "you hold no reservations\n",
		},
		{
			name: "none matched", args: []string{"unreserve", "oboe"}, code: exitError,
			stderr: "unreserve: no reservation of yours matched; netstatus -r lists them\n",
			want:   client.UnreserveRequest{Machines: []string{"oboe"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{ended: tt.ended}
			t.Setenv(envAddr, f.start(t))
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, tt.stdout)
			}
			if stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr, tt.stderr)
			}
			if len(f.unreserves) != 1 {
				t.Fatalf("got %d unreserve requests, want 1", len(f.unreserves))
			}
			got := f.unreserves[0]
			if got.ID != tt.want.ID || strings.Join(got.Machines, ",") != strings.Join(tt.want.Machines, ",") {
				t.Errorf("request = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReservationsStatusAgainstFakeServer(t *testing.T) {
	now := time.Now()
	y, m, d := now.Date()
	f := &fakeServer{reservations: []client.Reservation{
		{ID: 3, Owner: "root", Machines: []string{"flute", "viola"}, From: time.Date(y, m, d, 14, 0, 0, 0, time.Local),
			Until: time.Date(y, m, d, 16, 0, 0, 0, time.Local)},
	}}
	t.Setenv(envAddr, f.start(t))
	code, stdout, stderr := runCLI(t, "netstatus", "-r")
	if code != exitOK {
		t.Fatalf("exit code = %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	want := "ID  OWNER  MACHINES     FROM   UNTIL\n3   root   flute,viola  14:00  16:00\n"
	if stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
	}
}
