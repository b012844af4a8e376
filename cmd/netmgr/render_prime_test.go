package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// samplePrimeQueues has debug inside its prime-time window and night
// outside, at primeNow (Monday 2026-11-30 10:00 UTC).
func samplePrimeQueues() []client.Queue {
	debugOut := client.QueueValues{Priority: 5, MaxUserActive: 2}
	debugIn := client.QueueValues{Priority: 20, MaxUserActive: 8}
	nightOut := client.QueueValues{Priority: 1, MaxActive: 4}
	nightIn := client.QueueValues{Priority: 1, MaxActive: 0}
	return []client.Queue{
		{Name: "debug", Priority: 20, MaxUserActive: 8, Jobs: 3, Waiting: 1, Running: 2, Prime: &client.QueuePrime{
			Windows: []string{"Mon-Fri 08:00-18:00"}, TZ: "UTC", Open: true, Since: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
			Next: time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC), Outside: debugOut, Inside: debugIn,
		}},
		{Name: "night", Priority: 1, MaxActive: 4, Jobs: 40, Waiting: 36, Running: 4, Prime: &client.QueuePrime{
			Windows: []string{"Mon-Fri 18:00-08:00", "Sat-Sun"}, TZ: "UTC", Since: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),
			Next: time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC), NextOpen: true, Outside: nightOut, Inside: nightIn,
		}},
		{Name: client.DefaultQueue},
	}
}

var primeNow = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// TestRenderPrimeQueues checks netstatus -q with prime-time windows: the
// values in force, and a PRIME column with the state, the next change
// and what it sets; --json holds the window as the API gives it.
func TestRenderPrimeQueues(t *testing.T) {
	for _, tt := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"queues_prime.golden", func(b *bytes.Buffer) error { return renderQueues(b, samplePrimeQueues(), primeNow) }},
		{"queues_prime.json.golden", func(b *bytes.Buffer) error { return renderQueuesJSON(b, samplePrimeQueues()) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.render(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestRenderPrimeCell(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *client.QueuePrime
		want string
	}{
		{"none", nil, "-"},
		{"never changes", &client.QueuePrime{Open: true}, "open"},
		{"closes later today", samplePrimeQueues()[0].Prime, "open until 18:00 (then priority 5, maxuser_active 2)"},
		{"opens on another day", &client.QueuePrime{Next: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC), NextOpen: true,
			Outside: client.QueueValues{Priority: 1}, Inside: client.QueueValues{Priority: 3}}, "closed until Wed 08:00 (then priority 3)"},
	} {
		if got := renderPrime(tc.p, primeNow); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
