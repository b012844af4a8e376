package raftnode

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestAdmissionChecksOneAtATimeAndWaitsAfterRefusal(t *testing.T) {
	a := NewAdmission()
	now := time.Now()
	if !a.Begin("s3", now) {
		t.Fatal("Begin of a new member = false, want true")
	}
	if a.Begin("s3", now) {
		t.Fatal("Begin while a check is under way = true, want false")
	}
	if !a.Begin("s4", now) {
		t.Fatal("Begin of another member = false, want true")
	}
	a.End("s3", true, now)
	if a.Begin("s3", now.Add(AdmitRetry-time.Millisecond)) {
		t.Fatal("Begin within AdmitRetry of a refusal = true, want false")
	}
	if !a.Begin("s3", now.Add(AdmitRetry)) {
		t.Fatal("Begin AdmitRetry after a refusal = false, want true")
	}
	a.End("s3", false, now.Add(AdmitRetry))
	a.End("s4", false, now)
	if !a.Begin("s4", now) {
		t.Fatal("Begin after an admission = false, want true")
	}
}

func TestAdmissionRefuseLogsOncePerPeriod(t *testing.T) {
	a := NewAdmission()
	now := time.Now()
	type verdict struct {
		log  bool
		held int
	}
	for i, tt := range []struct {
		name string
		at   time.Time
		want verdict
	}{
		{"rogue", now, verdict{true, 0}},
		{"rogue", now.Add(time.Second), verdict{false, 0}},
		{"other", now.Add(time.Second), verdict{true, 0}},
		{"rogue", now.Add(2 * time.Second), verdict{false, 0}},
		{"rogue", now.Add(admitLogEvery), verdict{true, 2}},
	} {
		if log, held := a.Refuse(tt.name, tt.at); (verdict{log, held}) != tt.want {
			t.Errorf("refusal %d of %s: Refuse = %v, %d; want %v, %d", i, tt.name, log, held, tt.want.log, tt.want.held)
		}
	}
	if got := a.Refused(); got != 5 {
		t.Errorf("Refused = %d, want 5", got)
	}
}

// VerifyServer accepts only a Raft address that answers with a server
// certificate of the cluster CA naming the member checked.
func TestVerifyServer(t *testing.T) {
	p := newTLSPKI(t, serverID("s0"), serverID("s1"), stubID("m1"))
	l, err := newTLSStreamLayer("127.0.0.1:0", nil, p.material(serverID("s0")), new(logRecorder).logger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	stub := stubListener(t, p)
	checker := p.material(serverID("s1"))
	for _, tt := range []struct {
		name, member, addr, want string // want: "" for admitted
	}{
		{"the server itself", "s0", l.Addr().String(), ""},
		{"another server's address", "s9", l.Addr().String(), "answers as server s0, not as server s9"},
		{"a stub's certificate", "m1", stub, "wrong certificate role"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyServer(context.Background(), checker, tt.member, tt.addr)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("VerifyServer(%s) = %v, want nil", tt.member, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("VerifyServer(%s) = %v, want an error containing %q", tt.member, err, tt.want)
			}
		})
	}
}
