package history_test

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/server/history"
)

// BenchmarkLastEvents500Of20000 is what a starting server pays to seed
// its dashboard timeline: the last 500 events of a history of 20,000.
func BenchmarkLastEvents500Of20000(b *testing.B) {
	db, err := history.Open(b.TempDir() + "/history.db")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	entries := make([]history.Entry, 0, 10000)
	for i := range 10000 {
		at := t0.Add(time.Duration(i) * time.Second)
		entries = append(entries, history.Entry{Index: uint64(i + 1), Events: []history.Event{
			{At: at, Kind: "instance-started", Job: uint64(i), Machine: "flute", Detail: "pid 4242"},
			{At: at, Kind: "instance-ended", Job: uint64(i), Machine: "flute", Detail: "exit 0"},
		}})
	}
	if err := db.Write(entries); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		evs, err := db.LastEvents(500)
		if err != nil || len(evs) != 500 {
			b.Fatalf("LastEvents(500): %d events, %v", len(evs), err)
		}
	}
}
