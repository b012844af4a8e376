package main

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// metricsPage is a /metrics page with one family of each type.
const metricsPage = `# HELP jobs_total Jobs seen.
# TYPE jobs_total counter
jobs_total{queue="batch",state="done"} 3
jobs_total{queue="default",state="done"} 4
# HELP leader 1 while leading.
# TYPE leader gauge
leader 1
# HELP odd A value with awkward labels.
# TYPE odd untyped
odd{path="a\"b\\c"} -2.5
# HELP pass_seconds Pass time.
# TYPE pass_seconds histogram
pass_seconds_bucket{le="0.001"} 2
pass_seconds_bucket{le="0.01"} 5
pass_seconds_bucket{le="+Inf"} 6
pass_seconds_sum 0.75
pass_seconds_count 6
# HELP rpc_seconds RPC time.
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 0.02
rpc_seconds_sum 1.5
rpc_seconds_count 30
`

func TestScrapeMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(metricsPage))
	}))
	defer srv.Close()
	got, err := scrapeMetrics(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatalf("scrapeMetrics: %v", err)
	}
	want := map[string]float64{
		`jobs_total{queue="batch",state="done"}`:   3,
		`jobs_total{queue="default",state="done"}`: 4,
		`leader`:                          1,
		`odd{path="a\"b\\c"}`:             -2.5,
		`pass_seconds_bucket{le="0.001"}`: 2,
		`pass_seconds_bucket{le="0.01"}`:  5,
		`pass_seconds_bucket{le="+Inf"}`:  6,
		`pass_seconds_sum`:                0.75,
		`pass_seconds_count`:              6,
		`rpc_seconds{quantile="0.5"}`:     0.02,
		`rpc_seconds_sum`:                 1.5,
		`rpc_seconds_count`:               30,
	}
	if !maps.Equal(got, want) {
		t.Errorf("scrapeMetrics =\n%v\nwant\n%v", got, want)
	}
}

func TestScrapeMetricsErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string
	}{
		{"status", http.StatusNotFound, "no such endpoint", "404"},
		{"garbage", http.StatusOK, "not metrics at all {{{\n", "parse metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			_, err := scrapeMetrics(context.Background(), srv.Client(), srv.URL)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("scrapeMetrics = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
