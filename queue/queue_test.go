package queue

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestOrder(t *testing.T) {
	tests := []struct {
		name string
		in   []Item
		want []Item
	}{
		{name: "nil", in: nil, want: nil},
		{name: "one", in: []Item{{JobID: 1}}, want: []Item{{JobID: 1}}},
		{
			name: "higher priority first",
			in:   []Item{{JobID: 1, Priority: 0, SubmitIndex: 5}, {JobID: 2, Priority: 10, SubmitIndex: 9}},
			want: []Item{{JobID: 2, Priority: 10, SubmitIndex: 9}, {JobID: 1, Priority: 0, SubmitIndex: 5}},
		},
		{
			name: "negative priority last",
			in:   []Item{{JobID: 1, Priority: -1}, {JobID: 2}, {JobID: 3, Priority: 1}},
			want: []Item{{JobID: 3, Priority: 1}, {JobID: 2}, {JobID: 1, Priority: -1}},
		},
		{
			name: "earlier submit first at equal priority",
			in:   []Item{{JobID: 1, SubmitIndex: 30}, {JobID: 2, SubmitIndex: 20}, {JobID: 3, SubmitIndex: 10}},
			want: []Item{{JobID: 3, SubmitIndex: 10}, {JobID: 2, SubmitIndex: 20}, {JobID: 1, SubmitIndex: 30}},
		},
		{
			name: "job id breaks a submit tie",
			in:   []Item{{JobID: 9, SubmitIndex: 4}, {JobID: 3, SubmitIndex: 4}},
			want: []Item{{JobID: 3, SubmitIndex: 4}, {JobID: 9, SubmitIndex: 4}},
		},
		{
			name: "instances in order within a job",
			in:   []Item{{JobID: 1, Instance: 2}, {JobID: 1, Instance: 0}, {JobID: 1, Instance: 1}},
			want: []Item{{JobID: 1, Instance: 0}, {JobID: 1, Instance: 1}, {JobID: 1, Instance: 2}},
		},
		{
			name: "all keys together",
			in: []Item{
				{JobID: 5, Instance: 1, Priority: 0, SubmitIndex: 100},
				{JobID: 7, Instance: 0, Priority: 5, SubmitIndex: 300},
				{JobID: 5, Instance: 0, Priority: 0, SubmitIndex: 100},
				{JobID: 6, Instance: 0, Priority: 5, SubmitIndex: 200},
				{JobID: 4, Instance: 0, Priority: 0, SubmitIndex: 50},
				{JobID: 7, Instance: 1, Priority: 5, SubmitIndex: 300},
			},
			want: []Item{
				{JobID: 6, Instance: 0, Priority: 5, SubmitIndex: 200},
				{JobID: 7, Instance: 0, Priority: 5, SubmitIndex: 300},
				{JobID: 7, Instance: 1, Priority: 5, SubmitIndex: 300},
				{JobID: 4, Instance: 0, Priority: 0, SubmitIndex: 50},
				{JobID: 5, Instance: 0, Priority: 0, SubmitIndex: 100},
				{JobID: 5, Instance: 1, Priority: 0, SubmitIndex: 100},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			Order(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Order(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestOrderAcrossQueues(t *testing.T) {
	// Queue "urgent" has priority 10, "default" 0 and "idle" -5: every
	// item of a higher-priority queue runs first, whenever it was
	// submitted; within a priority, submit order decides across queues.
	tests := []struct {
		name string
		in   []Item
		want []Item
	}{
		{
			name: "higher queue first despite a later submit",
			in: []Item{
				{JobID: 1, SubmitIndex: 10, Queue: "default"},
				{JobID: 2, SubmitIndex: 20, Queue: "urgent", Priority: 10},
				{JobID: 3, SubmitIndex: 5, Queue: "idle", Priority: -5},
			},
			want: []Item{
				{JobID: 2, SubmitIndex: 20, Queue: "urgent", Priority: 10},
				{JobID: 1, SubmitIndex: 10, Queue: "default"},
				{JobID: 3, SubmitIndex: 5, Queue: "idle", Priority: -5},
			},
		},
		{
			name: "equal priorities interleave by submit order",
			in: []Item{
				{JobID: 4, SubmitIndex: 40, Queue: "b"},
				{JobID: 1, SubmitIndex: 10, Queue: "a"},
				{JobID: 3, SubmitIndex: 30, Queue: "a"},
				{JobID: 2, SubmitIndex: 20, Queue: "b"},
			},
			want: []Item{
				{JobID: 1, SubmitIndex: 10, Queue: "a"},
				{JobID: 2, SubmitIndex: 20, Queue: "b"},
				{JobID: 3, SubmitIndex: 30, Queue: "a"},
				{JobID: 4, SubmitIndex: 40, Queue: "b"},
			},
		},
		{
			name: "instances of a high queue's job stay together ahead",
			in: []Item{
				{JobID: 1, Instance: 0, SubmitIndex: 1, Queue: "default"},
				{JobID: 9, Instance: 1, SubmitIndex: 90, Queue: "urgent", Priority: 10},
				{JobID: 1, Instance: 1, SubmitIndex: 1, Queue: "default"},
				{JobID: 9, Instance: 0, SubmitIndex: 90, Queue: "urgent", Priority: 10},
			},
			want: []Item{
				{JobID: 9, Instance: 0, SubmitIndex: 90, Queue: "urgent", Priority: 10},
				{JobID: 9, Instance: 1, SubmitIndex: 90, Queue: "urgent", Priority: 10},
				{JobID: 1, Instance: 0, SubmitIndex: 1, Queue: "default"},
				{JobID: 1, Instance: 1, SubmitIndex: 1, Queue: "default"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			Order(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Order(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestOrderAnyInputOrder checks that every permutation of the input gives
// the same order.
func TestOrderAnyInputOrder(t *testing.T) {
	want := []Item{
		{JobID: 2, Instance: 0, Priority: 1, SubmitIndex: 9},
		{JobID: 1, Instance: 0, SubmitIndex: 3},
		{JobID: 1, Instance: 1, SubmitIndex: 3},
		{JobID: 3, Instance: 0, SubmitIndex: 3},
		{JobID: 4, Instance: 0, SubmitIndex: 8},
	}
	var permute func(prefix, rest []Item)
	permute = func(prefix, rest []Item) {
		if len(rest) == 0 {
			got := slices.Clone(prefix)
			Order(got)
			if !slices.Equal(got, want) {
				t.Errorf("Order(%v) = %v, want %v", prefix, got, want)
			}
			return
		}
		for i := range rest {
			next := append(slices.Clone(prefix), rest[i])
			others := append(slices.Clone(rest[:i]), rest[i+1:]...)
			permute(next, others)
		}
	}
	permute(nil, want)
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name string
		a, b Item
		want int
	}{
		{"equal", Item{JobID: 1, Instance: 2}, Item{JobID: 1, Instance: 2}, 0},
		{"priority beats submit", Item{Priority: 1, SubmitIndex: 9}, Item{SubmitIndex: 1}, -1},
		{"queue priority beats job priority", Item{Priority: 1}, Item{JobPriority: 9}, -1},
		{"interactive beats job priority", Item{Interactive: true}, Item{JobPriority: 9}, -1},
		{"job priority beats share", Item{JobPriority: 1, Share: 5, SubmitIndex: 9}, Item{Share: 0, SubmitIndex: 1}, -1},
		{"negative job priority after none", Item{JobPriority: -1, SubmitIndex: 1}, Item{SubmitIndex: 9}, 1},
		{"submit beats job id", Item{JobID: 9, SubmitIndex: 1}, Item{JobID: 1, SubmitIndex: 2}, -1},
		{"job id beats instance", Item{JobID: 1, Instance: 9}, Item{JobID: 2}, -1},
		{"instance last", Item{JobID: 1, Instance: 1}, Item{JobID: 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compare(tt.a, tt.b); got != tt.want {
				t.Errorf("Compare(%v, %v) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := Compare(tt.b, tt.a); got != -tt.want {
				t.Errorf("Compare(%v, %v) = %d, want %d", tt.b, tt.a, got, -tt.want)
			}
		})
	}
}

func TestOrderAllocs(t *testing.T) {
	items := []Item{{JobID: 3}, {JobID: 1}, {JobID: 2}}
	if n := testing.AllocsPerRun(10, func() { Order(items) }); n != 0 {
		t.Errorf("Order allocations = %v, want 0", n)
	}
}

// BenchmarkOrder10000 orders 10,000 waiting instances of 2,500 jobs in
// eight queues of four priorities, from a shuffled copy each time.
func BenchmarkOrder10000(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]Item, 0, 10_000)
	for job := range 2_500 {
		q := job % 8
		for inst := range 4 {
			src = append(src, Item{
				JobID: uint64(job + 1), Instance: inst, Priority: q % 4,
				SubmitIndex: uint64(rng.IntN(100_000)), Queue: string(rune('a' + q)),
			})
		}
	}
	rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	items := make([]Item, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(items, src)
		Order(items)
	}
}
