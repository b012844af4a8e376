package promtext

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// GoCollector reports the Go runtime's metrics under client_golang's
// names (go_goroutines, go_memstats_*, go_gc_duration_seconds, ...),
// read with runtime.ReadMemStats and debug.ReadGCStats at each scrape.
func GoCollector() Collector { return CollectorFunc(collectGo) }

func collectGo() []Family {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	threads, _ := runtime.ThreadCreateProfile(nil)

	quantiles := make([]Quantile, len(gc.PauseQuantiles))
	for i, d := range gc.PauseQuantiles {
		quantiles[i] = Quantile{Q: float64(i) / 4, Value: d.Seconds()}
	}
	mem := func(name, help string, v uint64) Family {
		return Gauge("go_memstats_"+name, help, float64(v))
	}
	counter := func(name, help string, v uint64) Family {
		return Family{Name: "go_memstats_" + name, Help: help, Type: CounterType, Samples: []Sample{{Value: float64(v)}}}
	}
	return []Family{
		{Name: "go_gc_duration_seconds", Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.",
			Type: SummaryType, Samples: []Sample{{Summary: &SummarySample{
				Quantiles: quantiles, Sum: gc.PauseTotal.Seconds(), Count: uint64(gc.NumGC)}}}},
		Gauge("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable.",
			gogcPercent()),
		Gauge("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function.",
			float64(debug.SetMemoryLimit(-1))),
		Gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		{Name: "go_info", Help: "Information about the Go environment.", Type: GaugeType,
			Samples: []Sample{{Labels: []Label{{Name: "version", Value: runtime.Version()}}, Value: 1}}},
		mem("alloc_bytes", "Number of bytes allocated in heap and currently in use.", ms.Alloc),
		counter("alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", ms.TotalAlloc),
		mem("buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", ms.BuckHashSys),
		counter("frees_total", "Total number of heap objects frees.", ms.Frees),
		mem("gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", ms.GCSys),
		mem("heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes.", ms.HeapAlloc),
		mem("heap_idle_bytes", "Number of heap bytes waiting to be used.", ms.HeapIdle),
		mem("heap_inuse_bytes", "Number of heap bytes that are in use.", ms.HeapInuse),
		mem("heap_objects", "Number of currently allocated objects.", ms.HeapObjects),
		mem("heap_released_bytes", "Number of heap bytes released to OS.", ms.HeapReleased),
		mem("heap_sys_bytes", "Number of heap bytes obtained from system.", ms.HeapSys),
		Gauge("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(ms.LastGC)/1e9),
		counter("mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge.", ms.Mallocs),
		mem("mcache_inuse_bytes", "Number of bytes in use by mcache structures.", ms.MCacheInuse),
		mem("mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", ms.MCacheSys),
		mem("mspan_inuse_bytes", "Number of bytes in use by mspan structures.", ms.MSpanInuse),
		mem("mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", ms.MSpanSys),
		mem("next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", ms.NextGC),
		mem("other_sys_bytes", "Number of bytes used for other system allocations.", ms.OtherSys),
		mem("stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", ms.StackInuse),
		mem("stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", ms.StackSys),
		mem("sys_bytes", "Number of bytes obtained from system.", ms.Sys),
		Gauge("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously.",
			float64(runtime.GOMAXPROCS(0))),
		Gauge("go_threads", "Number of OS threads created.", float64(threads)),
	}
}

// gogcPercent is the GOGC setting as the runtime reads it at start: 100
// unset, -1 for off. (The program never calls debug.SetGCPercent; reading
// the runtime's own value needs runtime/metrics, whose package
// initialisation is what this package avoids.)
func gogcPercent() float64 {
	v := os.Getenv("GOGC")
	if v == "" {
		return 100
	}
	if strings.EqualFold(v, "off") {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 100
	}
	return float64(n)
}
