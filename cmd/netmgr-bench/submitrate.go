package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netmgr/netmgr/client"
)

// submitClients is how many clients submit at once in the submit-rate
// phase, as the figure asks.
const submitClients = 64

// submitRate runs conc clients that submit single-instance jobs of bin as
// fast as the servers accept them, without waiting for the jobs, for d.
// It returns the submits accepted in each whole 1 s window and the errors.
// The jobs queue up behind the machines' slots; the cluster is torn down
// after the suite, so they need not run.
func submitRate(ctx context.Context, cl *client.Client, bin string, conc int, d time.Duration) (windows []float64, accepted int, errs int, lastErr string) {
	start := time.Now()
	deadline := start.Add(d)
	nwin := max(int(d/time.Second), 1)
	counts := make([]atomic.Int64, nwin)
	var (
		mu      sync.Mutex // guards errs and lastErr
		wg      sync.WaitGroup
		total   atomic.Int64
		spec    = client.JobSpec{Binaries: map[string]string{client.AnyKey: bin}, Min: 1}
		timeout = 10 * time.Second
	)
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				sctx, cancel := context.WithTimeout(ctx, timeout)
				_, err := cl.Submit(sctx, client.SubmitRequest{Spec: spec})
				cancel()
				if err != nil {
					mu.Lock()
					errs++
					lastErr = fmt.Sprintf("submit: %v", err)
					mu.Unlock()
					continue
				}
				total.Add(1)
				if w := int(time.Since(start) / time.Second); w < nwin {
					counts[w].Add(1)
				}
			}
		})
	}
	wg.Wait()
	windows = make([]float64, nwin)
	for i := range counts {
		windows[i] = float64(counts[i].Load())
	}
	return windows, int(total.Load()), errs, lastErr
}
