package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMetrics reads the Prometheus text page at url (a server's or a
// stub's /metrics) and returns every sample by its series: the metric name
// and its labels sorted by name, rendered as name{a="x",b="y"} (just name
// when it has none). A histogram gives name_bucket{le="..."}, name_sum and
// name_count; a summary name{quantile="..."}, name_sum and name_count.
// Nothing is summed across series. hc makes the request: the cluster's
// (ProcCluster.HTTPClient), which holds a client certificate where the
// cluster runs with TLS.
func scrapeMetrics(ctx context.Context, hc *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse metrics from %s: %w", url, err)
	}
	out := make(map[string]float64)
	for name, f := range families {
		for _, m := range f.GetMetric() {
			addSamples(out, name, m)
		}
	}
	return out, nil
}

// addSamples adds the samples of one metric of family name to out.
func addSamples(out map[string]float64, name string, m *dto.Metric) {
	labels := m.GetLabel()
	switch {
	case m.Counter != nil:
		out[seriesName(name, labels)] = m.GetCounter().GetValue()
	case m.Gauge != nil:
		out[seriesName(name, labels)] = m.GetGauge().GetValue()
	case m.Untyped != nil:
		out[seriesName(name, labels)] = m.GetUntyped().GetValue()
	case m.Histogram != nil:
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			out[seriesName(name+"_bucket", labels, "le", formatFloat(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
		}
		out[seriesName(name+"_sum", labels)] = h.GetSampleSum()
		out[seriesName(name+"_count", labels)] = float64(h.GetSampleCount())
	case m.Summary != nil:
		s := m.GetSummary()
		for _, q := range s.GetQuantile() {
			out[seriesName(name, labels, "quantile", formatFloat(q.GetQuantile()))] = q.GetValue()
		}
		out[seriesName(name+"_sum", labels)] = s.GetSampleSum()
		out[seriesName(name+"_count", labels)] = float64(s.GetSampleCount())
	}
}

// seriesName renders name with labels plus the extra name/value pairs,
// sorted by label name, values escaped as the text format does.
func seriesName(name string, labels []*dto.LabelPair, extra ...string) string {
	pairs := make([][2]string, 0, len(labels)+len(extra)/2)
	for _, l := range labels {
		pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		pairs = append(pairs, [2]string{extra[i], extra[i+1]})
	}
	if len(pairs) == 0 {
		return name
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(p[0] + `="` + labelEscaper.Replace(p[1]) + `"`)
	}
	sb.WriteByte('}')
	return sb.String()
}

// labelEscaper escapes a label value as the Prometheus text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// formatFloat renders a bucket bound or quantile as the text format does.
func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
