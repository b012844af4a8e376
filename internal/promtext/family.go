package promtext

// Type is the kind of a metric family, as its TYPE line names it.
type Type string

// The metric types this package writes.
const (
	CounterType   Type = "counter"
	GaugeType     Type = "gauge"
	HistogramType Type = "histogram"
	SummaryType   Type = "summary"
)

// Family is one metric family as a scrape reads it: its name, help and
// type and its samples, one per distinct set of label values.
type Family struct {
	Name    string
	Help    string
	Type    Type
	Samples []Sample
}

// Sample is one series of a family. Value is a counter's or a gauge's
// value; a histogram's sample has Hist, a summary's Summary.
type Sample struct {
	Labels  []Label
	Value   float64
	Hist    *HistogramSample
	Summary *SummarySample
}

// Label is one label name and value of a sample.
type Label struct{ Name, Value string }

// HistogramSample is a histogram's state: the upper bounds of its
// buckets, ascending and without +Inf, the number of observations at or
// below each (cumulative), and the sum and number of all observations.
type HistogramSample struct {
	Bounds     []float64
	Cumulative []uint64
	Sum        float64
	Count      uint64
}

// SummarySample is a summary's state: quantiles with their values, and
// the sum and number of observations.
type SummarySample struct {
	Quantiles []Quantile
	Sum       float64
	Count     uint64
}

// Quantile is one quantile of a summary and its value.
type Quantile struct{ Q, Value float64 }

// Collector reports metric families at scrape time.
type Collector interface {
	// Collect returns the families as they are now. A family without
	// samples is left out of the page.
	Collect() []Family
}

// CollectorFunc is a function that collects.
type CollectorFunc func() []Family

// Collect calls f.
func (f CollectorFunc) Collect() []Family { return f() }

// labelPairs pairs names with values; the two have the same length.
func labelPairs(names, values []string) []Label {
	if len(names) == 0 {
		return nil
	}
	ls := make([]Label, len(names))
	for i, n := range names {
		ls[i] = Label{Name: n, Value: values[i]}
	}
	return ls
}
