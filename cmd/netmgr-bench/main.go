package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
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
	flag.BoolVar(&cfg.keep, "keep", false, "keep the cluster's data and logs directory")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if cfg.n < 1 || cfg.concurrency < 1 || cfg.duration <= 0 {
		return errors.New("-n and -c must be positive and -duration longer than zero")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.json {
		return res.writeJSON(os.Stdout)
	}
	res.writeTable(os.Stdout)
	return nil
}
