package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "netmgr-chaos: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// run parses the flags and runs the suite: 0 when every rule held or
// there is no Docker engine, 1 on a violation; an error (exit 2) when the
// suite itself could not run.
func run() (int, error) {
	cfg := config{servers: 5, stubs: 6, portBase: 14646, rate: 700 * time.Millisecond, drain: 4 * time.Minute, maxWorkLost: -1}
	subnet := "172.28.213.0/24"
	flag.StringVar(&cfg.netmgr, "netmgr", "bin/chaos/netmgr", "static netmgr binary (CGO_ENABLED=0)")
	flag.StringVar(&cfg.busybox, "busybox", "/bin/busybox", "static busybox (Debian's busybox-static)")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Minute, "how long the workload runs and faults are injected")
	flag.Int64Var(&cfg.seed, "seed", 0, "seed of the fault schedule and the job mix (default: from the time)")
	flag.StringVar(&cfg.schedule, "schedule", "", "replay the schedule in `FILE` (as printed by an earlier run); overrides -seed and -duration")
	flag.StringVar(&subnet, "subnet", subnet, "the private network's IPv4 subnet")
	flag.IntVar(&cfg.portBase, "port-base", cfg.portBase, "127.0.0.1 port published for s1's API; s2 gets the next, ...")
	flag.DurationVar(&cfg.rate, "rate", cfg.rate, "time between two submits")
	flag.DurationVar(&cfg.drain, "drain", cfg.drain, "how long to wait for the jobs to finish after the faults")
	flag.IntVar(&cfg.maxWorkLost, "max-work-lost", cfg.maxWorkLost,
		"fail when more than `N` attempts of restartable jobs were stopped by whole-control-plane faults (pause-all, kill-all, cut-stubs), which need not stop them; -1: no limit, only report the figure")
	flag.BoolVar(&cfg.keep, "keep", false, "leave the containers, network and volumes behind")
	flag.BoolVar(&cfg.insecure, "insecure", false, "run the servers and stubs with --insecure (no TLS, no authentication) instead of a throw-away CA's certificates")
	flag.StringVar(&cfg.outDir, "out", "", "`DIR` for the logs, compose file and ledger (default: a new temp dir)")
	dryRun := flag.Bool("dry-run", false, "print the schedule and exit")
	flag.Parse()
	if flag.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	p, err := netip.ParsePrefix(subnet)
	if err != nil {
		return 2, fmt.Errorf("-subnet: %w", err)
	}
	cfg.subnet = p
	if cfg.duration <= 0 || cfg.rate <= 0 || cfg.drain <= 0 {
		return 2, errors.New("-duration, -rate and -drain must be positive")
	}

	sc, err := loadSchedule(cfg)
	if err != nil {
		return 2, err
	}
	if *dryRun {
		sc.write(os.Stdout, "")
		return 0, nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := detectEngine(ctx); err != nil {
		fmt.Printf("chaos: skipped: %v\n", err)
		return 0, nil
	}
	rep, err := suite(ctx, cfg, sc)
	if err != nil {
		return 2, err
	}
	rep.write(os.Stdout)
	if rep.failed() {
		return 1, nil
	}
	return 0, nil
}

// loadSchedule reads -schedule, or generates one from -seed (the time
// when unset).
func loadSchedule(cfg config) (schedule, error) {
	if cfg.schedule == "" {
		seed := cfg.seed
		if seed == 0 {
			seed = time.Now().UnixNano() % 1_000_000_000
		}
		return generate(seed, cfg.duration, cfg.servers, cfg.stubs), nil
	}
	f, err := os.Open(cfg.schedule)
	if err != nil {
		return schedule{}, fmt.Errorf("-schedule: %w", err)
	}
	defer f.Close()
	return parseSchedule(f)
}
