package owner

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// loadDetector puts the machine to sleep while the load not caused by the
// stub's own jobs is over max: the load average less own(), or the load
// monitor's number when it printed one.
type loadDetector struct {
	path string
	max  float64
	own  func() float64 // nil: no own jobs counted
}

// reasonLoad is the verdict for a load over the threshold: "load 3.2 > 2".
func reasonLoad(load, max float64) string {
	return "load " + strconv.FormatFloat(load, 'f', 1, 64) + " > " + strconv.FormatFloat(max, 'f', -1, 64)
}

// check compares the load with max; monitor is the load monitor's number,
// used in place of the load average when ok.
func (d *loadDetector) check(monitor float64, ok bool) (string, error) {
	load := monitor
	if !ok {
		l, err := readLoadAvg(d.path)
		if err != nil {
			return "", err
		}
		if d.own != nil {
			l = max(l-d.own(), 0)
		}
		load = l
	}
	if load > d.max {
		return reasonLoad(load, d.max), nil
	}
	return "", nil
}

// readLoadAvg returns the 1-minute load average of a file laid out as
// /proc/loadavg.
func readLoadAvg(path string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read load average: %w", err)
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, fmt.Errorf("read load average: %s is empty", path)
	}
	l, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("read load average: %w", err)
	}
	return l, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture netmgr runs on.
const clockTicks = 100

// GroupsLoad returns an OwnLoad function measuring the CPUs the processes
// of the process groups groups() lists used since its previous call (0 on
// the first): the stub's own jobs' share of the load, as HTCondor
// subtracts the load of its own jobs. A process that ends between two
// calls takes its time with it, so the share errs low. Safe for use by
// one goroutine at a time.
func GroupsLoad(groups func() []int) func() float64 {
	var (
		lastCPU  float64
		lastWall time.Time
	)
	return func() float64 {
		now := time.Now()
		cpu := groupsCPU(groups())
		prevCPU, prevWall := lastCPU, lastWall
		lastCPU, lastWall = cpu, now
		if prevWall.IsZero() || cpu < prevCPU {
			return 0
		}
		wall := now.Sub(prevWall).Seconds()
		if wall <= 0 {
			return 0
		}
		return (cpu - prevCPU) / wall
	}
}

// LoadTau is the time constant of the kernel's 1-minute load average,
// which SmoothLoad gives the own jobs' share too, so that the two can be
// subtracted: a job that just started has added little to either.
const LoadTau = time.Minute

// SmoothLoad returns f's readings averaged as the kernel averages the
// 1-minute load: exponentially, with time constant LoadTau, over the time
// between calls. Safe for use by one goroutine at a time.
func SmoothLoad(f func() float64) func() float64 {
	var s smoother
	return func() float64 { return s.add(f(), time.Now()) }
}

// smoother is an exponential moving average over wall time.
type smoother struct {
	avg  float64
	last time.Time
}

// add folds in v, read at now, and returns the average.
func (s *smoother) add(v float64, now time.Time) float64 {
	if !s.last.IsZero() {
		if dt := now.Sub(s.last); dt > 0 {
			w := math.Exp(-dt.Seconds() / LoadTau.Seconds())
			s.avg = s.avg*w + v*(1-w)
		}
	}
	s.last = now
	return s.avg
}

// groupsCPU is the user and system CPU seconds of the live processes in
// the process groups.
func groupsCPU(groups []int) float64 {
	if len(groups) == 0 {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	total := 0.0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		pgrp, ticks, ok := procStat(e.Name())
		if !ok {
			continue
		}
		for _, g := range groups {
			if g == pgrp {
				total += float64(ticks) / clockTicks
				break
			}
		}
	}
	return total
}

// procStat returns the process group and utime+stime (in ticks) of a
// process from /proc/PID/stat.
func procStat(pid string) (pgrp int, ticks int64, ok bool) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3, state
	if len(f) < 13 {
		return 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return pgrp, ut + st, true
}
