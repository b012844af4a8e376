package promtext_test

import (
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/netmgr/netmgr/internal/promtext"
)

// TestTextAsClientGolang feeds the same counters, histograms and gauges to
// a registry of this package and to one of prometheus/client_golang, and
// checks that both write the same page.
func TestTextAsClientGolang(t *testing.T) {
	bounds := []float64{.00001, .0005, 1, 2.5, 10}
	ours := promtext.NewRegistry()
	theirs := prometheus.NewRegistry()

	c := promtext.NewCounter("t_events_total", "Events, with a \\ and a\nnewline.")
	pc := prometheus.NewCounter(prometheus.CounterOpts{Name: "t_events_total", Help: "Events, with a \\ and a\nnewline."})
	cv := promtext.NewCounterVec("t_requests_total", "Requests by route.", []string{"route"})
	pcv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_requests_total", Help: "Requests by route."}, []string{"route"})
	empty := promtext.NewCounterVec("t_denied_total", "Never counted, so left out.", []string{"reason"})
	pempty := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_denied_total", Help: "Never counted, so left out."}, []string{"reason"})
	h := promtext.NewHistogram("t_pass_seconds", "Pass time.", bounds)
	ph := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t_pass_seconds", Help: "Pass time.", Buckets: bounds})
	hv := promtext.NewHistogramVec("t_commit_seconds", "Commit time by command.", bounds, []string{"command"})
	phv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "t_commit_seconds", Help: "Commit time by command.", Buckets: bounds}, []string{"command"})
	ours.MustRegister(c, cv, empty, h, hv,
		promtext.NewGaugeFunc("t_nan", "Not a number.", math.NaN),
		promtext.NewGaugeFunc("t_big", "A big one.", func() float64 { return 1.8446744073709552e+19 }),
		promtext.NewCounterFunc("t_read_total", "A counter read at scrape.", func() float64 { return 7 }),
		promtext.CollectorFunc(func() []promtext.Family {
			return []promtext.Family{{Name: "t_queue", Help: "By queue.", Type: promtext.GaugeType, Samples: []promtext.Sample{
				{Labels: []promtext.Label{{Name: "queue", Value: "default"}}, Value: 2},
				{Labels: []promtext.Label{{Name: "queue", Value: `b"a\tch`}}, Value: 1},
			}}}
		}))
	queueDesc := prometheus.NewDesc("t_queue", "By queue.", []string{"queue"}, nil)
	theirs.MustRegister(pc, pcv, pempty, ph, phv,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "t_nan", Help: "Not a number."}, math.NaN),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "t_big", Help: "A big one."}, func() float64 { return 1.8446744073709552e+19 }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "t_read_total", Help: "A counter read at scrape."}, func() float64 { return 7 }),
		collectorFunc{desc: queueDesc, collect: func(ch chan<- prometheus.Metric) {
			ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, 2, "default")
			ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, 1, `b"a\tch`)
		}})

	for range 3 {
		c.Inc()
		pc.Inc()
	}
	for _, route := range []string{"POST /v1/jobs", "GET /v1/jobs", "POST /v1/jobs", "unmatched"} {
		cv.WithLabelValues(route).Inc()
		pcv.WithLabelValues(route).Inc()
	}
	for _, v := range []float64{0, .00001, .0001, .0005, .7, 1, 3, 11, 1e6} {
		h.Observe(v)
		ph.Observe(v)
		hv.WithLabelValues("Submit").Observe(v)
		phv.WithLabelValues("Submit").Observe(v)
	}
	hv.WithLabelValues("Place").Observe(.002)
	phv.WithLabelValues("Place").Observe(.002)

	if got, want := text(t, ours.Handler()), text(t, promhttpHandler(theirs)); got != want {
		t.Errorf("page differs from client_golang's:\n--- ours\n%s\n--- client_golang\n%s", got, want)
	}
	if got := h.Count(); got != 9 {
		t.Errorf("histogram count = %d, want 9", got)
	}
	if got := cv.WithLabelValues("POST /v1/jobs").Value(); got != 2 {
		t.Errorf("counter value = %v, want 2", got)
	}
}

// TestRuntimeNamesAsClientGolang checks that the Go and process
// collectors report the families client_golang's default collectors do,
// with the same types, on a page client_golang's parser reads.
func TestRuntimeNamesAsClientGolang(t *testing.T) {
	ours := promtext.NewRegistry()
	ours.MustRegister(promtext.GoCollector(), promtext.ProcessCollector())
	theirs := prometheus.NewRegistry()
	theirs.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	got, want := families(t, text(t, ours.Handler())), families(t, text(t, promhttpHandler(theirs)))
	if !slices.Equal(got, want) {
		t.Errorf("families (name type):\n got  %v\n want %v", got, want)
	}
	var buf bytes.Buffer
	if err := ours.Write(&buf, "go_goroutines", "process_resident_memory_bytes"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "\ngo_goroutines ") || !strings.Contains(page, "\nprocess_resident_memory_bytes ") || strings.Contains(page, "go_threads") {
		t.Errorf("Write of two families gave:\n%s", page)
	}
}

// TestHandlerGzip checks that a client accepting gzip gets the page
// compressed and the same once inflated.
func TestHandlerGzip(t *testing.T) {
	r := promtext.NewRegistry()
	r.MustRegister(promtext.NewGaugeFunc("t_one", "One.", func() float64 { return 1 }))
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL) // the transport asks for gzip and inflates
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if !resp.Uncompressed || buf.String() != "# HELP t_one One.\n# TYPE t_one gauge\nt_one 1\n" {
		t.Errorf("gzip %v, page %q", resp.Uncompressed, buf.String())
	}
	if ct := resp.Header.Get("Content-Type"); ct != promtext.ContentType {
		t.Errorf("Content-Type %q, want %q", ct, promtext.ContentType)
	}
}

func text(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

func families(t *testing.T, page string) []string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fs, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, page)
	}
	var out []string
	for name, f := range fs {
		out = append(out, name+" "+f.GetType().String())
	}
	slices.Sort(out)
	return out
}

type collectorFunc struct {
	desc    *prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func promhttpHandler(r *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(r, promhttp.HandlerOpts{})
}
