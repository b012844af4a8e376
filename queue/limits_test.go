package queue

import (
	"errors"
	"testing"
	"time"
)

func TestCheckSubmit(t *testing.T) {
	tests := []struct {
		name    string
		queue   string
		limits  Limits
		held    int
		memMB   int64
		wantErr error
		wantMsg string
	}{
		{name: "no limits", queue: "default", held: 1_000_000, memMB: 1 << 40},
		{name: "below max size", queue: "NEW_Q", limits: Limits{MaxSize: 120}, held: 119},
		{
			name: "at max size", queue: "NEW_Q", limits: Limits{MaxSize: 120}, held: 120,
			wantErr: ErrQueueFull,
			wantMsg: "queue NEW_Q is full: it holds 120 jobs (nq_maxsize=120); wait for some to finish or use another queue",
		},
		{
			name: "above max size after the limit was lowered", queue: "NEW_Q", limits: Limits{MaxSize: 100}, held: 130,
			wantErr: ErrQueueFull,
			wantMsg: "queue NEW_Q is full: it holds 130 jobs (nq_maxsize=100); wait for some to finish or use another queue",
		},
		{
			name: "one job", queue: "solo", limits: Limits{MaxSize: 1}, held: 1,
			wantErr: ErrQueueFull,
			wantMsg: "queue solo is full: it holds 1 job (nq_maxsize=1); wait for some to finish or use another queue",
		},
		{name: "memory at the limit", queue: "NEW_Q", limits: Limits{MaxMemMB: 20}, memMB: 20},
		{name: "memory not asked", queue: "NEW_Q", limits: Limits{MaxMemMB: 20}, memMB: 0},
		{
			name: "memory over the limit", queue: "NEW_Q", limits: Limits{MaxMemMB: 20}, memMB: 64,
			wantErr: ErrMemoryOverLimit,
			wantMsg: "job asks 64 MB per instance but queue NEW_Q allows 20 MB (nq_maxmem=20); ask for memory=20 or less, or use another queue",
		},
		{
			name: "memory is reported before a full queue", queue: "NEW_Q", limits: Limits{MaxSize: 1, MaxMemMB: 20}, held: 5, memMB: 21,
			wantErr: ErrMemoryOverLimit,
			wantMsg: "job asks 21 MB per instance but queue NEW_Q allows 20 MB (nq_maxmem=20); ask for memory=20 or less, or use another queue",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSubmit(tt.queue, tt.limits, tt.held, tt.memMB)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckSubmit() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckSubmit() = %v, want errors.Is %v", err, tt.wantErr)
			}
			if got := err.Error(); got != tt.wantMsg {
				t.Errorf("CheckSubmit() message = %q, want %q", got, tt.wantMsg)
			}
		})
	}
}

func TestRunLimit(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		want time.Duration
	}{
		{"none", Limits{}, 0},
		{"negative is none", Limits{MaxRunSeconds: -5}, 0},
		{"200 minutes", Limits{MaxRunSeconds: 200 * 60}, 200 * time.Minute},
		{"90 seconds", Limits{MaxRunSeconds: 90}, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.RunLimit(); got != tt.want {
				t.Errorf("RunLimit() = %v, want %v", got, tt.want)
			}
		})
	}
}
