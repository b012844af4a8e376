package promtext

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"
)

// userHZ is the kernel's clock tick for /proc's times, fixed at 100 on
// Linux whatever the kernel's HZ.
const userHZ = 100

// ProcessCollector reports the process's CPU time, memory, file
// descriptors, start time and network bytes under client_golang's names
// (process_*), read from /proc/self at each scrape. A file that cannot be
// read leaves its metrics out.
func ProcessCollector() Collector { return CollectorFunc(collectProcess) }

func collectProcess() []Family {
	var fs []Family
	counter := func(name, help string, v float64) Family {
		return Family{Name: name, Help: help, Type: CounterType, Samples: []Sample{{Value: v}}}
	}
	if st, ok := readSelfStat(); ok {
		fs = append(fs,
			counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", st.cpuSeconds),
			Gauge("process_resident_memory_bytes", "Resident memory size in bytes.", st.rssBytes),
			Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", st.vsizeBytes))
		if boot, ok := bootTime(); ok {
			fs = append(fs, Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", boot+st.startSeconds))
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fs = append(fs, Gauge("process_open_fds", "Number of open file descriptors.", float64(len(ents))))
	}
	if lim, err := os.ReadFile("/proc/self/limits"); err == nil {
		if v, ok := softLimit(lim, "Max open files"); ok {
			fs = append(fs, Gauge("process_max_fds", "Maximum number of open file descriptors.", v))
		}
		if v, ok := softLimit(lim, "Max address space"); ok {
			fs = append(fs, Gauge("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", v))
		}
	}
	if rx, tx, ok := netDevTotals(); ok {
		fs = append(fs,
			counter("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", rx),
			counter("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", tx))
	}
	return fs
}

// selfStat is what collectProcess takes from /proc/self/stat.
type selfStat struct {
	cpuSeconds, startSeconds, rssBytes, vsizeBytes float64
}

// readSelfStat reads /proc/self/stat: utime and stime (fields 14 and 15),
// starttime (22, since boot), vsize (23) and rss (24, in pages).
func readSelfStat() (selfStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return selfStat{}, false
	}
	return parseStat(b, os.Getpagesize())
}

// parseStat parses a /proc/PID/stat line; the fields after the command
// (which may hold spaces and parentheses) start after its last ')'.
func parseStat(b []byte, pageSize int) (selfStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return selfStat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 22 {
		return selfStat{}, false
	}
	num := func(field int) float64 {
		v, _ := strconv.ParseUint(f[field-3], 10, 64)
		return float64(v)
	}
	return selfStat{
		cpuSeconds:   (num(14) + num(15)) / userHZ,
		startSeconds: num(22) / userHZ,
		vsizeBytes:   num(23),
		rssBytes:     num(24) * float64(pageSize),
	}, true
}

// bootTime reads the boot time, in seconds since 1970, from /proc/stat.
func bootTime() (float64, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return float64(n), err == nil
		}
	}
	return 0, false
}

// softLimit finds the soft limit of the /proc/PID/limits line that starts
// with name; "unlimited" is the largest uint64, as client_golang reports it.
func softLimit(limits []byte, name string) (float64, bool) {
	for _, line := range strings.Split(string(limits), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		if f[0] == "unlimited" {
			return math.MaxUint64, true
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		return float64(n), err == nil
	}
	return 0, false
}

// netDevTotals sums the received and sent bytes of every interface in
// the process's network namespace (/proc/self/net/dev).
func netDevTotals() (rx, tx float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return 0, 0, false
	}
	return parseNetDev(b)
}

// parseNetDev parses /proc/net/dev: two header lines, then
// "iface: rx_bytes rx_packets ... (8 receive fields) tx_bytes ...".
func parseNetDev(b []byte) (rx, tx float64, ok bool) {
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 {
		return 0, 0, false
	}
	for _, line := range lines[2:] {
		_, rest, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			continue
		}
		r, err1 := strconv.ParseUint(f[0], 10, 64)
		t, err2 := strconv.ParseUint(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		rx += float64(r)
		tx += float64(t)
	}
	return rx, tx, true
}
