package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

func TestReadSSE(t *testing.T) {
	stream := "retry: 500\nevent: hello\ndata: {\"server\":\"s2\"}\n\n" +
		"id: e:1\ndata: {\"kind\":\"job-submitted\",\"job\":7,\"at\":\"2026-11-28T02:00:00Z\"}\n\n" +
		"event: ping\ndata: {}\n\n" +
		"id: e:2\ndata: {\"kind\":\"instance-started\",\"job\":7}\n\n" +
		"data: not json\n\n"
	hellos := 0
	var got []streamEvent
	if err := readSSE(strings.NewReader(stream), func() { hellos++ }, func(e streamEvent) { got = append(got, e) }); err != nil {
		t.Fatalf("readSSE: %v", err)
	}
	if hellos != 1 {
		t.Errorf("hello called %d times, want 1", hellos)
	}
	want := []streamEvent{
		{Kind: "job-submitted", Job: 7, At: time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)},
		{Kind: "instance-started", Job: 7},
	}
	if !slices.Equal(got, want) {
		t.Errorf("events = %+v, want %+v (the hello and ping events' data and a line that is not JSON left out)", got, want)
	}
}

func TestArrivals(t *testing.T) {
	at := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	var a arrivals
	e := streamEvent{Kind: uiEventKind, Job: 9, At: at}
	// The pages may see it before the submit returns.
	a.saw(e, ms(5), 3)
	a.saw(streamEvent{Kind: "instance-started", Job: 9, At: at}, ms(1), 3)
	a.saw(e, ms(2), 3)
	w := a.get(9, 3)
	select {
	case <-w.done:
		t.Fatal("done after 2 of 3 pages")
	default:
	}
	a.saw(e, ms(12), 3)
	a.saw(e, ms(50), 3) // a replay after a reconnect: not counted
	select {
	case <-w.done:
	default:
		t.Fatal("not done after 3 of 3 pages")
	}
	if first, last := w.spread(); first != 2 || last != 12 {
		t.Errorf("spread = %v, %v ms, want 2, 12", first, last)
	}
}

func TestUpCount(t *testing.T) {
	ms := []client.Machine{
		{Name: "a-0", State: client.MachineUp},
		{Name: "a-1", State: client.MachineSuspect},
		{Name: "b-0", State: client.MachineUp},
		{Name: "a-2", State: client.MachineUp},
	}
	if got := upCount(ms, []string{"a-0", "a-1", "a-2"}); got != 2 {
		t.Errorf("upCount = %d, want 2 (a-1 is suspect, b-0 not asked for)", got)
	}
}

func TestPerEvents(t *testing.T) {
	got := perEvents([]float64{150, 100}, []float64{50, 100})
	want := []float64{100.0 / uiEventRate, 0}
	if !slices.Equal(got, want) {
		t.Errorf("perEvents = %v, want %v", got, want)
	}
}
