package server_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// BenchmarkSubmitToRegistered measures jobs from submit until their
// instance has registered (CHILD_REGISTER committed), on a durable 3-server
// group with 2 stubs forking /bin/true: one submitter at a time (latency),
// and 32 concurrent submitters (throughput, bounded by the stubs' slots:
// one per CPU). Run with -cpuprofile to see what limits it.
func BenchmarkSubmitToRegistered(b *testing.B) {
	for _, submitters := range []int{1, 32} {
		b.Run(fmt.Sprintf("submitters=%d", submitters), func(b *testing.B) {
			benchSubmit(b, submitters)
		})
	}
}

func benchSubmit(b *testing.B, submitters int) {
	c := servertest.NewDurableCluster(b, 3)
	c.WaitLeader()
	c.AddStub("bench1")
	c.AddStub("bench2")
	cl := c.Client()
	testwait.For(b, 15*time.Second, "stubs up", func() bool {
		ms, err := cl.Machines(context.Background())
		return err == nil && len(ms) == 2
	})
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}}
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for range jobs {
				resp, err := cl.Submit(ctx, client.SubmitRequest{Spec: spec})
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := cl.WaitJob(ctx, strconv.FormatUint(resp.ID, 10), client.WaitStarted); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for range b.N {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
	b.StopTimer()
	reportStages(b, cl)
}

// reportStages splits the latency by the times the leader and the stubs
// stamped: submit to placed (queueing + scheduling + Place commit) and
// placed to started (dispatch + fork on the stub).
func reportStages(b *testing.B, cl *client.Client) {
	jobs, err := cl.Jobs(context.Background())
	if err != nil {
		b.Fatalf("jobs: %v", err)
	}
	var place, start []float64
	for _, j := range jobs {
		in := j.Instances[0]
		place = append(place, float64(in.PlacedAt.Sub(j.SubmittedAt).Microseconds())/1000)
		start = append(start, float64(in.StartedAt.Sub(in.PlacedAt).Microseconds())/1000)
	}
	b.ReportMetric(median(place), "ms-to-placed")
	b.ReportMetric(median(start), "ms-placed-to-started")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}
