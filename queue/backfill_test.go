package queue

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func TestDeclaredEnd(t *testing.T) {
	tests := []struct {
		name  string
		start time.Time
		limit time.Duration
		want  time.Time
	}{
		{"limit", at(10), time.Minute, at(70)},
		{"no limit", at(10), 0, time.Time{}},
		{"negative limit", at(10), -time.Second, time.Time{}},
		{"not started", time.Time{}, time.Minute, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DeclaredEnd(tt.start, tt.limit); !got.Equal(tt.want) {
				t.Errorf("DeclaredEnd(%v, %v) = %v, want %v", tt.start, tt.limit, got, tt.want)
			}
		})
	}
}

func TestShadow(t *testing.T) {
	var none time.Time
	tests := []struct {
		name      string
		need      int
		ends      []time.Time
		wantAt    time.Time
		wantKnown bool
	}{
		{name: "need nothing: start now", need: 0, ends: []time.Time{at(5)}, wantAt: none, wantKnown: true},
		{name: "negative need", need: -1, wantAt: none, wantKnown: true},
		{name: "no busy capacity", need: 1, ends: nil, wantAt: none, wantKnown: false},
		{name: "one of one", need: 1, ends: []time.Time{at(30)}, wantAt: at(30), wantKnown: true},
		{name: "earliest of unordered", need: 1, ends: []time.Time{at(90), at(30), at(60)}, wantAt: at(30), wantKnown: true},
		{name: "second earliest", need: 2, ends: []time.Time{at(90), at(30), at(60)}, wantAt: at(60), wantKnown: true},
		{name: "all of them", need: 3, ends: []time.Time{at(90), at(30), at(60)}, wantAt: at(90), wantKnown: true},
		{name: "need more than busy", need: 4, ends: []time.Time{at(90), at(30), at(60)}, wantAt: none, wantKnown: false},
		{name: "equal ends", need: 2, ends: []time.Time{at(40), at(40), at(50)}, wantAt: at(40), wantKnown: true},
		{name: "no declared end never frees", need: 2, ends: []time.Time{none, at(30), none, at(60)}, wantAt: at(60), wantKnown: true},
		{name: "too few declared ends", need: 3, ends: []time.Time{none, at(30), none, at(60)}, wantAt: none, wantKnown: false},
		{name: "only undeclared", need: 1, ends: []time.Time{none, none}, wantAt: none, wantKnown: false},
		{name: "an end in the past", need: 1, ends: []time.Time{at(-5), at(60)}, wantAt: at(-5), wantKnown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.ends)
			gotAt, gotKnown := Shadow(tt.need, tt.ends)
			if !gotAt.Equal(tt.wantAt) || gotKnown != tt.wantKnown {
				t.Errorf("Shadow(%d, %v) = %v, %v, want %v, %v", tt.need, tt.ends, gotAt, gotKnown, tt.wantAt, tt.wantKnown)
			}
			if !slices.EqualFunc(in, tt.ends, time.Time.Equal) {
				t.Errorf("Shadow changed ends: %v, want %v", tt.ends, in)
			}
		})
	}
}

func TestMayBackfill(t *testing.T) {
	now := at(0)
	tests := []struct {
		name   string
		limit  time.Duration
		shadow time.Time
		known  bool
		want   bool
	}{
		{"ends before the shadow", 30 * time.Second, at(60), true, true},
		{"ends exactly at the shadow", 60 * time.Second, at(60), true, true},
		{"ends after the shadow", 61 * time.Second, at(60), true, false},
		{"no declared run limit", 0, at(60), true, false},
		{"negative run limit", -time.Second, at(60), true, false},
		{"shadow unknown", time.Second, time.Time{}, false, false},
		{"shadow unknown, long limit", 1000 * time.Hour, time.Time{}, false, false},
		{"head can start now", time.Second, time.Time{}, true, false},
		{"shadow in the past", time.Second, at(-10), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MayBackfill(now, tt.limit, tt.shadow, tt.known); got != tt.want {
				t.Errorf("MayBackfill(%v, %v, %v, %v) = %v, want %v", now, tt.limit, tt.shadow, tt.known, got, tt.want)
			}
		})
	}
}
