package stub

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/stub/outbox"
	"github.com/netmgr/netmgr/stub/supervisor"
)

// A batch answers each Start on its own, in order: new attempts start, a
// Start with no binary is refused with 400, a repeat is taken and not
// started again; every Start taken is answered with its REGISTER.
func TestStartBatch(t *testing.T) {
	srv := newFakeServer(t, 0)
	s := newTestStub(t, Config{Servers: []string{srv.addr()}})
	c := stubClient(t, s)

	known := shJob(1, 0, "true")
	mustStart(t, c, known)
	batch := client.StartBatchRequest{Starts: []client.StartRequest{
		shJob(2, 0, "true"),
		{JobID: 3, Attempt: 1},
		known,
		shJob(2, 1, "true"),
	}}
	tests := []struct {
		name string
		want []client.StartResult // Error compared by substring
	}{
		{name: "first", want: []client.StartResult{
			{Status: http.StatusOK, Started: true},
			{Status: http.StatusBadRequest, Error: "no binary"},
			{Status: http.StatusOK},
			{Status: http.StatusOK, Started: true},
		}},
		{name: "repeated", want: []client.StartResult{
			{Status: http.StatusOK},
			{Status: http.StatusBadRequest, Error: "no binary"},
			{Status: http.StatusOK},
			{Status: http.StatusOK},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.StartBatch(context.Background(), batch)
			if err != nil {
				t.Fatalf("StartBatch: %v", err)
			}
			if len(resp.Results) != len(tt.want) {
				t.Fatalf("got %d results, want %d", len(resp.Results), len(tt.want))
			}
			for i, got := range resp.Results {
				want := tt.want[i]
				if got.Status != want.Status || got.Started != want.Started || !strings.Contains(got.Error, want.Error) || (want.Error == "" && got.Error != "") {
					t.Errorf("result %d = %+v, want %+v", i, got, want)
				}
				if taken := got.Status == http.StatusOK; taken != (got.Register != nil) {
					t.Errorf("result %d answered REGISTER %+v, want one only when taken", i, got.Register)
				}
			}
		})
	}
	for _, req := range []client.StartRequest{batch.Starts[0], batch.Starts[3]} {
		if evs := srv.waitTerm(t, keyOf(req)); len(evs) != 2 {
			t.Errorf("events of %s = %+v, want one REGISTER and one TERM", keyOf(req), evs)
		}
	}
}

// A batch the stub cannot take as a whole is refused with 400.
func TestStartBatchRefused(t *testing.T) {
	s := newTestStub(t, Config{})
	c := stubClient(t, s)
	batch := client.StartBatchRequest{Starts: make([]client.StartRequest, maxBatchStarts+1)}
	_, err := c.StartBatch(context.Background(), batch)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("StartBatch of %d starts: err = %v, want a 400", len(batch.Starts), err)
	}
}

// A batch gets each started attempt's REGISTER in its answer, and the
// outbox does not send it: the attempt's events reach the server only
// with its TERM, after a copy of the REGISTER. A repeated
// Start, even to the next stub on the same data dir, answers with the same
// REGISTER; an attempt whose exec failed has none.
func TestStartBatchAnswersRegister(t *testing.T) {
	srv := newFakeServer(t, 0)
	cfg := Config{Servers: []string{srv.addr()}, DataDir: t.TempDir(), ExecDir: t.TempDir()}
	first, err := New(withTestDefaults(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	running, ending := shJob(1, 0, "exec sleep 30"), shJob(2, 0, "true")
	missing := client.StartRequest{JobID: 3, Attempt: 1, Binary: "/no/such/binary"}
	batch := client.StartBatchRequest{Starts: []client.StartRequest{running, ending, missing}}
	resp, err := stubClient(t, first).StartBatch(context.Background(), batch)
	if err != nil {
		t.Fatalf("StartBatch: %v", err)
	}
	regs := make([]*client.ChildEvent, len(batch.Starts))
	for i, res := range resp.Results {
		if res.Status != http.StatusOK || !res.Started {
			t.Fatalf("result %d = %+v, want started", i, res)
		}
		regs[i] = res.Register
	}
	for i, req := range batch.Starts[:2] {
		if reg := regs[i]; reg == nil || reg.Kind != client.ChildRegister || keyOfEvent(*reg) != keyOf(req) || reg.PID <= 0 || reg.Machine != "m1" {
			t.Fatalf("REGISTER answered for %s = %+v, want one with its pid", keyOf(req), reg)
		}
	}
	if regs[2] != nil {
		t.Errorf("REGISTER answered for an exec that failed = %+v, want none", regs[2])
	}
	// The attempt that ended sent its REGISTER only before its TERM.
	if evs := srv.waitTerm(t, keyOf(ending)); len(evs) != 2 || !sameEvent(evs[0], *regs[1]) {
		t.Errorf("events of %s = %+v, want the answered REGISTER %+v, then the TERM", keyOf(ending), evs, *regs[1])
	}
	if evs := srv.waitTerm(t, keyOf(missing)); len(evs) != 1 || evs[0].ExitCode != supervisor.ExecFailedCode {
		t.Errorf("events of %s = %+v, want one TERM with exit code %d", keyOf(missing), evs, supervisor.ExecFailedCode)
	}

	// The next stub on the data dir answers a repeat from the record.
	if err := first.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	second := newTestStub(t, cfg)
	c := stubClient(t, second)
	resp, err = c.StartBatch(context.Background(), batch)
	if err != nil {
		t.Fatalf("StartBatch again: %v", err)
	}
	for i, res := range resp.Results {
		switch {
		case res.Status != http.StatusOK || res.Started:
			t.Errorf("repeated result %d = %+v, want taken, not started", i, res)
		case regs[i] == nil && res.Register != nil:
			t.Errorf("repeated result %d answered REGISTER %+v, want none", i, *res.Register)
		case regs[i] != nil && (res.Register == nil || !sameEvent(*res.Register, *regs[i])):
			t.Errorf("repeated result %d answered REGISTER %+v, want %+v", i, res.Register, *regs[i])
		}
	}
	if evs := srv.events(keyOf(running)); len(evs) != 0 {
		t.Errorf("events of the running %s = %+v, want none before its end", keyOf(running), evs)
	}
	if err := c.Signal(context.Background(), client.SignalRequest{JobID: 1, Attempt: 1, Signal: "KILL"}); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if evs := srv.waitTerm(t, keyOf(running)); len(evs) != 2 || !sameEvent(evs[0], *regs[0]) || evs[1].Signal != "KILL" {
		t.Errorf("events of %s = %+v, want the answered REGISTER %+v, then a TERM by KILL", keyOf(running), evs, *regs[0])
	}
}

// keyOfEvent names the attempt ev is about.
func keyOfEvent(ev client.ChildEvent) client.AttemptRef {
	return client.AttemptRef{JobID: ev.JobID, Instance: ev.Instance, Attempt: ev.Attempt}
}

// sameEvent reports whether a and b are the same event of the same attempt.
func sameEvent(a, b client.ChildEvent) bool {
	return a.Kind == b.Kind && keyOfEvent(a) == keyOfEvent(b) && a.Machine == b.Machine && a.PID == b.PID && a.At.Equal(b.At)
}

// A repeated Start that asks for the REGISTER waits for the first Start of
// the attempt to decide: it gets the REGISTER of an attempt that runs,
// none for one whose exec failed, and an error (so that the server sends
// it again) when the first Start failed and the attempt was forgotten.
func TestRegisterOfRepeatedStart(t *testing.T) {
	r := newRunner("m1", t.TempDir(), "c1", t.TempDir(), "", nil, nil, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(r.close)
	at := time.Now().UTC()
	tests := []struct {
		name    string
		settle  func(k client.AttemptRef, a *attempt) // what the first Start did
		wantPID int
		wantErr error
	}{
		{name: "runs", wantPID: 42, settle: func(_ client.AttemptRef, a *attempt) {
			a.rec, a.supervised = outbox.Record{PID: 42, At: at, RegisterAnswered: true}, true
		}},
		{name: "exec failed", settle: func(_ client.AttemptRef, a *attempt) {
			a.rec = outbox.Record{At: at, Ended: true}
		}},
		{name: "start failed", wantErr: errStartFailed, settle: func(k client.AttemptRef, _ *attempt) {
			delete(r.attempts, k)
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := client.AttemptRef{JobID: uint64(i + 1), Attempt: 1}
			a := &attempt{ready: make(chan struct{})}
			r.mu.Lock()
			r.attempts[k] = a
			r.mu.Unlock()
			type answer struct {
				reg *client.ChildEvent
				err error
			}
			got := make(chan answer, 1)
			go func() {
				reg, err := r.registerOf(k, a)
				got <- answer{reg, err}
			}()
			r.mu.Lock()
			tt.settle(k, a)
			r.mu.Unlock()
			close(a.ready)
			ans := <-got
			switch {
			case !errors.Is(ans.err, tt.wantErr):
				t.Errorf("err = %v, want %v", ans.err, tt.wantErr)
			case tt.wantPID == 0 && ans.reg != nil:
				t.Errorf("REGISTER = %+v, want none", *ans.reg)
			case tt.wantPID != 0 && (ans.reg == nil || ans.reg.PID != tt.wantPID || !ans.reg.At.Equal(at) || keyOfEvent(*ans.reg) != k):
				t.Errorf("REGISTER = %+v, want attempt %s with pid %d at %v", ans.reg, k, tt.wantPID, at)
			}
		})
	}
}
