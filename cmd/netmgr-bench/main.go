package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "netmgr-bench: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := defaultConfig(os.Getenv("BENCH_QUICK") != "")
	flag.StringVar(&cfg.bin, "netmgr", cfg.bin, "netmgr binary to run (built into a temp dir when empty)")
	flag.IntVar(&cfg.servers, "servers", cfg.servers, "number of server processes")
	flag.IntVar(&cfg.stubs, "stubs", cfg.stubs, "number of stub processes")
	flag.IntVar(&cfg.n, "n", cfg.n, "sequential jobs for the latency figure")
	flag.IntVar(&cfg.concurrency, "c", cfg.concurrency, "concurrent submitters for the throughput figure")
	flag.DurationVar(&cfg.duration, "duration", cfg.duration, "how long the throughput phase runs")
	flag.BoolVar(&cfg.json, "json", false, "print the results as JSON")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the clusters' data and logs directories")
	flag.StringVar(&cfg.only, "only", "", "run only these suites (comma-separated: "+suiteNames()+")")
	flag.IntVar(&cfg.allocRounds, "alloc-rounds", 0, "rounds of the alloc suite, each timing every size once (0: 11, 5 under BENCH_QUICK)")
	flag.StringVar(&cfg.scalePool, "scale-pool", "", "`SIZES` of the scale suite's simulated pools, comma-separated machine counts (default: "+
		scalePoolDefault+" with -only scale, "+scalePoolQuick+" under BENCH_QUICK, none otherwise)")
	flag.Float64Var(&cfg.scaleJoinRate, "scale-join-rate", scalePoolJoinRate, "machines (`N`) a second that begin to join a simulated pool of over 1,000 (netmgr sim --join-rate); 0: as fast as the servers answer")
	flag.DurationVar(&cfg.scaleSteady, "scale-steady", 0, "how long the scale suite watches each simulated pool at rest (default: 60s, 10s under BENCH_QUICK)")
	flag.StringVar(&cfg.sitePolicy, "site-policy", "", "a site policy script (`FILE`, Starlark) every cluster installs once ready, to take the figures with it loaded")
	flag.BoolVar(&cfg.insecure, "insecure", false, "run every cluster without TLS (--insecure), for comparison with the default, secure clusters")
	compare := flag.String("compare", "", "measure nothing: compare the secure and insecure runs in these -json `FILES` (comma-separated), figure by figure")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *compare != "" {
		return compareFiles(os.Stdout, strings.Split(*compare, ","))
	}
	if cfg.n < 1 || cfg.concurrency < 1 || cfg.duration <= 0 {
		return errors.New("-n and -c must be positive and -duration longer than zero")
	}

	run := selectSuites(cfg.only)
	if len(run) == 0 {
		return fmt.Errorf("-only %q names no suite; the suites are %s", cfg.only, suiteNames())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer removeDirs()
	rep := &report{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Quick: cfg.quick,
		Insecure: cfg.insecure, LoadBefore: loadAverage()}
	fmt.Fprintf(os.Stderr, "netmgr-bench: %s; load average %s\n", rep.mode(), orNone(rep.LoadBefore))
	for _, s := range run {
		fmt.Fprintf(os.Stderr, "== suite %s\n", s.name)
		figs, err := s.run(ctx, cfg)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "suite %s failed: %v\n", s.name, err)
			if rep.Failed == nil {
				rep.Failed = make(map[string]string)
			}
			rep.Failed[s.name] = err.Error()
			continue
		}
		rep.Figures = append(rep.Figures, figs...)
	}
	rep.LoadAfter = loadAverage()
	if cfg.json {
		if err := rep.writeJSON(os.Stdout); err != nil {
			return err
		}
	} else {
		rep.writeTable(os.Stdout)
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("%d of %d suites failed", len(rep.Failed), len(run))
	}
	return nil
}

// suiteNames lists the suites' names in run order.
func suiteNames() string {
	names := make([]string, len(suites))
	for i, s := range suites {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}
