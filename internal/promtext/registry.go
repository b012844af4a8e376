package promtext

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ContentType is the media type of the page a Registry serves.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Registry holds the collectors of one server or stub (tests run several
// in a process, so there is no default registry). Safe for concurrent use.
type Registry struct {
	mu         sync.Mutex // guards collectors
	collectors []Collector
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// MustRegister adds collectors. Two collectors must not report families of
// the same name; Gather panics if they do.
func (r *Registry) MustRegister(cs ...Collector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, cs...)
}

// Gather collects every family with samples, sorted by name, each family's
// samples sorted by their label values.
func (r *Registry) Gather() []Family {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	var fs []Family
	for _, c := range cs {
		for _, f := range c.Collect() {
			if len(f.Samples) > 0 {
				fs = append(fs, f)
			}
		}
	}
	slices.SortFunc(fs, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	for i := range fs {
		if i > 0 && fs[i].Name == fs[i-1].Name {
			panic(fmt.Sprintf("promtext: two collectors report %s", fs[i].Name))
		}
		slices.SortStableFunc(fs[i].Samples, compareLabels)
	}
	return fs
}

// compareLabels orders samples by their label values, label by label.
func compareLabels(a, b Sample) int {
	for i := 0; i < len(a.Labels) && i < len(b.Labels); i++ {
		if c := strings.Compare(a.Labels[i].Value, b.Labels[i].Value); c != 0 {
			return c
		}
	}
	return len(a.Labels) - len(b.Labels)
}

// Write writes the families named, or every family if none is named, in
// the text format.
func (r *Registry) Write(w io.Writer, names ...string) error {
	bw := bufio.NewWriter(w)
	for _, f := range r.Gather() {
		if len(names) == 0 || slices.Contains(names, f.Name) {
			writeFamily(bw, f)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

// Handler serves the registry in the text format, gzipped when the client
// accepts it.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		var out io.Writer = w
		if acceptsGzip(req.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		_ = r.Write(out) // a failed write is the client gone
	})
}

// acceptsGzip reports whether an Accept-Encoding value lists gzip with a
// non-zero weight.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" {
			return strings.ReplaceAll(params, " ", "") != "q=0"
		}
	}
	return false
}

// writeFamily writes one family: HELP, TYPE, then its samples.
func writeFamily(w *bufio.Writer, f Family) {
	w.WriteString("# HELP ")
	w.WriteString(f.Name)
	w.WriteByte(' ')
	w.WriteString(helpEscaper.Replace(f.Help))
	w.WriteString("\n# TYPE ")
	w.WriteString(f.Name)
	w.WriteByte(' ')
	w.WriteString(string(f.Type))
	w.WriteByte('\n')
	for _, s := range f.Samples {
		switch {
		case s.Hist != nil:
			h := s.Hist
			for i, b := range h.Bounds {
				writeSample(w, f.Name+"_bucket", s.Labels, "le", formatFloat(b), float64(h.Cumulative[i]))
			}
			writeSample(w, f.Name+"_bucket", s.Labels, "le", "+Inf", float64(h.Count))
			writeSample(w, f.Name+"_sum", s.Labels, "", "", h.Sum)
			writeSample(w, f.Name+"_count", s.Labels, "", "", float64(h.Count))
		case s.Summary != nil:
			sm := s.Summary
			for _, q := range sm.Quantiles {
				writeSample(w, f.Name, s.Labels, "quantile", formatFloat(q.Q), q.Value)
			}
			writeSample(w, f.Name+"_sum", s.Labels, "", "", sm.Sum)
			writeSample(w, f.Name+"_count", s.Labels, "", "", float64(sm.Count))
		default:
			writeSample(w, f.Name, s.Labels, "", "", s.Value)
		}
	}
}

// writeSample writes one line: name, the labels and the extra label (if
// extraName is not empty), the value.
func writeSample(w *bufio.Writer, name string, labels []Label, extraName, extraValue string, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extraName != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			writeLabel(w, l.Name, l.Value)
		}
		if extraName != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			writeLabel(w, extraName, extraValue)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func writeLabel(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(`="`)
	w.WriteString(labelEscaper.Replace(value))
	w.WriteByte('"')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatFloat spells a value as the text format does: +Inf, -Inf, NaN,
// else the shortest decimal that reads back the same.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
