package promtext

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is a count that only goes up. Safe for concurrent use.
type Counter struct {
	name, help string
	n          atomic.Uint64
}

// NewCounter returns a counter family of one series.
func NewCounter(name, help string) *Counter { return &Counter{name: name, help: help} }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Value returns the count.
func (c *Counter) Value() float64 { return float64(c.n.Load()) }

// Collect reports the counter.
func (c *Counter) Collect() []Family {
	return []Family{{Name: c.name, Help: c.help, Type: CounterType, Samples: []Sample{{Value: c.Value()}}}}
}

// Histogram counts observations into buckets. Safe for concurrent use.
type Histogram struct {
	name, help string
	labels     []Label // of a HistogramVec's series
	bounds     []float64

	mu     sync.Mutex // guards counts, sum and count
	counts []uint64   // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

// NewHistogram returns a histogram family of one series with the given
// bucket upper bounds, which must ascend.
func NewHistogram(name, help string, bounds []float64) *Histogram {
	return newHistogram(name, help, bounds, nil)
}

func newHistogram(name, help string, bounds []float64, labels []Label) *Histogram {
	if !sort.Float64sAreSorted(bounds) {
		panic(fmt.Sprintf("promtext: histogram %s: bounds not ascending", name))
	}
	return &Histogram{name: name, help: help, labels: labels, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe counts v in the first bucket whose upper bound is >= v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// sample returns the histogram's state now.
func (h *Histogram) sample() Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	cum := make([]uint64, len(h.bounds))
	var n uint64
	for i := range h.bounds {
		n += h.counts[i]
		cum[i] = n
	}
	return Sample{Labels: h.labels, Hist: &HistogramSample{Bounds: h.bounds, Cumulative: cum, Sum: h.sum, Count: h.count}}
}

// Collect reports the histogram.
func (h *Histogram) Collect() []Family {
	return []Family{{Name: h.name, Help: h.help, Type: HistogramType, Samples: []Sample{h.sample()}}}
}

// vec holds the series of a labelled family, made at first use.
type vec[T any] struct {
	name, help string
	labels     []string
	make       func(values []string) T

	mu     sync.Mutex   // guards series
	series map[string]T // by the label values joined with \xff
}

// with returns the series for values, made if new.
func (v *vec[T]) with(values []string) T {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("promtext: %s takes %d label values, got %d", v.name, len(v.labels), len(values)))
	}
	key := strings.Join(values, "\xff")
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.series[key]
	if !ok {
		if v.series == nil {
			v.series = make(map[string]T)
		}
		s = v.make(slices.Clone(values))
		v.series[key] = s
	}
	return s
}

// all returns the series made so far.
func (v *vec[T]) all() []T {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]T, 0, len(v.series))
	for _, s := range v.series {
		out = append(out, s)
	}
	return out
}

// CounterVec is a counter family with one series per set of label values.
// Safe for concurrent use.
type CounterVec struct {
	v vec[*labelledCounter]
}

type labelledCounter struct {
	Counter
	labels []Label
}

// NewCounterVec returns a counter family labelled by labels.
func NewCounterVec(name, help string, labels []string) *CounterVec {
	cv := &CounterVec{v: vec[*labelledCounter]{name: name, help: help, labels: labels}}
	cv.v.make = func(values []string) *labelledCounter {
		return &labelledCounter{labels: labelPairs(labels, values)}
	}
	return cv
}

// WithLabelValues returns the counter of the series with values, in the
// order of the family's labels.
func (cv *CounterVec) WithLabelValues(values ...string) *Counter { return &cv.v.with(values).Counter }

// Collect reports every series counted so far.
func (cv *CounterVec) Collect() []Family {
	f := Family{Name: cv.v.name, Help: cv.v.help, Type: CounterType}
	for _, c := range cv.v.all() {
		f.Samples = append(f.Samples, Sample{Labels: c.labels, Value: c.Value()})
	}
	return []Family{f}
}

// HistogramVec is a histogram family with one series per set of label
// values. Safe for concurrent use.
type HistogramVec struct {
	v vec[*Histogram]
}

// NewHistogramVec returns a histogram family labelled by labels, each
// series with the bucket upper bounds bounds.
func NewHistogramVec(name, help string, bounds []float64, labels []string) *HistogramVec {
	hv := &HistogramVec{v: vec[*Histogram]{name: name, help: help, labels: labels}}
	hv.v.make = func(values []string) *Histogram {
		return newHistogram(name, help, bounds, labelPairs(labels, values))
	}
	return hv
}

// WithLabelValues returns the histogram of the series with values.
func (hv *HistogramVec) WithLabelValues(values ...string) *Histogram { return hv.v.with(values) }

// Collect reports every series observed so far.
func (hv *HistogramVec) Collect() []Family {
	f := Family{Name: hv.v.name, Help: hv.v.help, Type: HistogramType}
	for _, h := range hv.v.all() {
		f.Samples = append(f.Samples, h.sample())
	}
	return []Family{f}
}

// ValueFunc is a counter or gauge of one series whose value a function
// reads at scrape time.
type ValueFunc struct {
	name, help string
	typ        Type
	read       func() float64
}

// NewGaugeFunc returns a gauge read by read at each scrape.
func NewGaugeFunc(name, help string, read func() float64) *ValueFunc {
	return &ValueFunc{name: name, help: help, typ: GaugeType, read: read}
}

// NewCounterFunc returns a counter read by read at each scrape; read's
// value must never go down.
func NewCounterFunc(name, help string, read func() float64) *ValueFunc {
	return &ValueFunc{name: name, help: help, typ: CounterType, read: read}
}

// Collect reads the value.
func (g *ValueFunc) Collect() []Family {
	return []Family{{Name: g.name, Help: g.help, Type: g.typ, Samples: []Sample{{Value: g.read()}}}}
}

// Gauge returns a family of one unlabelled gauge sample.
func Gauge(name, help string, v float64) Family {
	return Family{Name: name, Help: help, Type: GaugeType, Samples: []Sample{{Value: v}}}
}

// Bool is 1 for true and 0 for false, a gauge's way to say yes or no.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
