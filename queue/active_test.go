package queue

import "testing"

func TestActive(t *testing.T) {
	limits := map[string]Limits{
		"default": {},
		"two":     {MaxActive: 2},
		"one":     {MaxActive: 1, Priority: 5},
	}
	type step struct {
		queue     string
		wantAdmit bool
	}
	tests := []struct {
		name    string
		running map[string]int
		// steps admit and, when admitted, take one instance each.
		steps []step
	}{
		{
			name:  "zero means unlimited",
			steps: []step{{"default", true}, {"default", true}, {"default", true}, {"default", true}},
		},
		{
			name:  "a queue missing from the limits is unlimited",
			steps: []step{{"gone", true}, {"gone", true}},
		},
		{
			name:  "max active from empty",
			steps: []step{{"two", true}, {"two", true}, {"two", false}, {"two", false}},
		},
		{
			name:    "already running counts",
			running: map[string]int{"two": 1},
			steps:   []step{{"two", true}, {"two", false}},
		},
		{
			name:    "already over the limit after it was lowered",
			running: map[string]int{"one": 3},
			steps:   []step{{"one", false}},
		},
		{
			name:    "queues are counted apart",
			running: map[string]int{"two": 1, "default": 50},
			steps: []step{
				{"one", true}, {"two", true}, {"default", true},
				{"one", false}, {"two", false}, {"default", true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewActive(limits, tt.running)
			for i, s := range tt.steps {
				if got := a.Admit(s.queue); got != s.wantAdmit {
					t.Fatalf("step %d: Admit(%q) = %v, want %v (running %d)", i, s.queue, got, s.wantAdmit, a.Running(s.queue))
				}
				if s.wantAdmit {
					a.Take(s.queue)
				}
			}
		})
	}
}

func TestActiveCopiesRunning(t *testing.T) {
	running := map[string]int{"two": 1}
	a := NewActive(map[string]Limits{"two": {MaxActive: 2}}, running)
	a.Take("two")
	if got, want := running["two"], 1; got != want {
		t.Errorf("caller's running[two] = %d, want %d", got, want)
	}
	if got, want := a.Running("two"), 2; got != want {
		t.Errorf("Running(two) = %d, want %d", got, want)
	}
}

func TestActiveReason(t *testing.T) {
	limits := map[string]Limits{"NEW_Q": {MaxActive: 5}, "solo": {MaxActive: 1}}
	tests := []struct {
		name    string
		running map[string]int
		queue   string
		want    string
	}{
		{"admitted", map[string]int{"NEW_Q": 4}, "NEW_Q", ""},
		{"unlimited", map[string]int{"default": 400}, "default", ""},
		{"at the limit", map[string]int{"NEW_Q": 5}, "NEW_Q", "queue NEW_Q already runs 5 instances (nq_maxactive=5)"},
		{"one", map[string]int{"solo": 1}, "solo", "queue solo already runs 1 instance (nq_maxactive=1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewActive(limits, tt.running).Reason(tt.queue); got != tt.want {
				t.Errorf("Reason(%q) = %q, want %q", tt.queue, got, tt.want)
			}
		})
	}
}
