package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/testwait"
)

// BenchmarkHubFanOut100 is the cost of one event reaching 100 open
// pages: one Publish, then each of 100 Server-Sent Event streams (over
// loopback HTTP) delivers it to its reader. ns/op is the time from the
// Publish until the last page has the event.
func BenchmarkHubFanOut100(b *testing.B) {
	const pages = 100
	h := NewHub("s1")
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(pages)
	for range pages {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		go func() {
			r := bufio.NewReader(resp.Body)
			hello := true
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(line, "data: ") {
					if hello {
						hello = false
						ready.Done()
						continue
					}
					got.Done()
				}
			}
		}()
	}
	ready.Wait()
	testwait.For(b, 10*time.Second, "every page subscribed", func() bool { return h.Subscribers() >= pages })
	b.ResetTimer()
	for range b.N {
		got.Add(pages)
		h.Publish(Event{Kind: "bench", Text: "an event"})
		got.Wait()
	}
}
