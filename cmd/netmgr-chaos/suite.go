package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// suite runs one chaos run: image, cluster, workload and faults, healing,
// drain, checks. The report is nil only with an error, when the suite
// itself could not run.
func suite(ctx context.Context, cfg config, sc schedule) (*report, error) {
	fmt.Printf("chaos: seed %d\n", sc.Seed)
	topo, err := newTopology(cfg)
	if err != nil {
		return nil, err
	}
	if err := sc.validate(topo); err != nil {
		return nil, err
	}
	fmt.Println("chaos: schedule (replay: save these lines to a file and pass -schedule FILE):")
	sc.write(os.Stdout, "chaos:   ")

	out := cfg.outDir
	if out == "" {
		if out, err = os.MkdirTemp("", "netmgr-chaos-"); err != nil {
			return nil, fmt.Errorf("make output dir: %w", err)
		}
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("make output dir: %w", err)
	}
	fmt.Printf("chaos: logs, compose file and ledger in %s\n", out)
	sched, _ := os.Create(out + "/schedule.txt")
	if sched != nil {
		sc.write(sched, "")
		sched.Close()
	}

	composeCmd, err := detectCompose(ctx)
	if err != nil {
		return nil, err
	}
	d := &docker{compose: composeCmd}
	if err := buildImage(ctx, d, cfg.netmgr, cfg.busybox); err != nil {
		return nil, err
	}
	var sec *security
	if cfg.insecure {
		fmt.Println("chaos: -insecure: servers and stubs run without TLS or authentication")
	} else if sec, err = makeSecurity(out, topo); err != nil {
		return nil, err
	} else {
		fmt.Printf("chaos: TLS: a throw-away CA and certificates in %s, mounted read-only at %s; the checker acts as user %s by its client certificate\n", sec.dir, tlsMountDir, chaosUser)
	}
	if err := writeCompose(d, out, topo, cfg.subnet.Masked().String(), sec); err != nil {
		return nil, err
	}
	if err := checkNoOtherRun(ctx, d); err != nil {
		return nil, err
	}
	_ = composeDown(ctx, d) // a run that was interrupted may have left some behind
	if err := composeUp(ctx, d); err != nil {
		return nil, err
	}
	c, err := newCluster(d, topo, sec)
	if err != nil {
		return nil, err
	}
	defer func() {
		bg, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c.saveLogs(bg, out)
		if cfg.keep {
			fmt.Printf("chaos: containers kept (project %s); remove with: docker-compose -p %s -f %s/compose.yml down -v\n", project, project, out)
			return
		}
		if err := composeDown(bg, d); err != nil {
			fmt.Printf("chaos: %v\n", err)
		}
	}()
	fmt.Printf("chaos: %d servers and %d stubs starting (compose: %v)\n", len(topo.Servers), len(topo.Stubs), composeCmd)
	if err := c.waitReady(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	fmt.Println("chaos: cluster ready; workload and faults start")
	return exercise(ctx, cfg, sc, c, out)
}

// exercise runs the workload under the schedule, heals, drains and checks.
func exercise(ctx context.Context, cfg config, sc schedule, c *cluster, out string) (*report, error) {
	now := func() float64 { u, _ := uptime(); return u }
	rep := &report{Seed: sc.Seed, Start: now()}
	start := time.Now()
	w := newWorkload(c.cli, cfg.rate, sc.Seed)
	inj := &injector{c: c, out: os.Stdout, now: now}
	wctx, cancel := context.WithTimeout(ctx, sc.Duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.run(wctx) }()
	go func() { defer wg.Done(); inj.run(ctx, start, sc) }()
	wg.Wait()

	acks, failed, skipped, lastErr := w.results()
	rep.Jobs, rep.Injected = len(acks), inj.results()
	rep.Chained = chained(acks)
	fmt.Printf("chaos: +%s workload stopped: %d jobs acknowledged, %d submits failed, %d ticks skipped (submitters busy)\n",
		since(start), len(acks), failed, skipped)
	if lastErr != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("last submit error: %v", lastErr))
	}
	for _, in := range rep.Injected {
		if in.Err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("fault skipped: %s: %v", in.Fault, in.Err))
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}

	for _, err := range healAll(ctx, c) {
		rep.Violations = append(rep.Violations, violation{Kind: vCheck, Instance: -1, Detail: err.Error()})
	}
	if err := c.waitReady(ctx, 2*time.Minute); err != nil {
		rep.Violations = append(rep.Violations, violation{Kind: vCheck, Instance: -1, Detail: "after healing: " + err.Error()})
	}
	runs, err := endCron(ctx, c.cli, acks)
	if err != nil {
		rep.Violations = append(rep.Violations, violation{Kind: vCheck, Instance: -1, Detail: err.Error()})
	}
	fmt.Printf("chaos: +%s healed; cron schedule ended after %d runs; draining (up to %s)\n", since(start), len(runs), cfg.drain)
	if err := drain(ctx, c.cli, append(slices.Clone(acks), runs...), cfg.drain, os.Stdout); err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	fmt.Printf("chaos: +%s checking\n", since(start))
	check(ctx, c, acks, out, rep)
	rep.Violations = append(rep.Violations, checkWorkLost(rep.Stops, cfg.maxWorkLost)...)
	return rep, nil
}

// check gathers the database, every server's copy, the ledger and the
// stubs' processes, and judges them.
func check(ctx context.Context, c *cluster, acks []ack, out string, rep *report) {
	fail := func(format string, args ...any) {
		rep.Violations = append(rep.Violations, violation{Kind: vCheck, Instance: -1, Detail: fmt.Sprintf(format, args...)})
	}
	toLedger, err := ledgerClock()
	if err != nil {
		fail("%v", err)
		return
	}
	jobs, err := consistentJobs(ctx, c.cli)
	if err != nil {
		fail("%v", err)
		return
	}
	vs, notes := checkDB(acks, jobs)
	rep.Violations = append(rep.Violations, vs...)
	rep.Notes = append(rep.Notes, notes...)

	recs, problems, err := readLedger(ctx, c.d, out)
	if err != nil {
		fail("%v", err)
	} else {
		for _, p := range problems {
			rep.Violations = append(rep.Violations, violation{Kind: vLedger, Instance: -1, Detail: p})
		}
		vs, notes := checkLedger(recs, jobs, toLedger, freezesOf(rep.Injected))
		rep.Violations = append(rep.Violations, vs...)
		rep.Notes = append(rep.Notes, notes...)
		vs, notes = checkDeps(acks, jobs, recs)
		rep.Violations = append(rep.Violations, vs...)
		rep.Notes = append(rep.Notes, notes...)
		vs, sum := checkCron(acks, jobs, recs)
		rep.Violations = append(rep.Violations, vs...)
		rep.Cron = sum
		pinTimes(rep.Violations, recs)
		fmt.Printf("chaos: ledger: %d records\n", len(recs))
		// The events only add how each stop was recorded; the ring holds
		// the last few thousand, so a long run sees the late ones only.
		evs, err := c.cli.Events(ctx, 0)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("read events (for how stops were recorded): %v", err))
		}
		rep.Stops = findStops(recs, jobs, rep.Injected, stopReasons(evs))
		saveStops(filepath.Join(out, "stops.txt"), rep.Stops, rep.Start)
	}

	div, views := compareServers(ctx, c, time.Minute)
	for _, v := range views {
		fmt.Printf("chaos: server %s: index %d, %d jobs, hash %s\n", v.Name, v.Index, v.Jobs, v.Hash)
	}
	rep.Violations = append(rep.Violations, div...)
	rep.Violations = append(rep.Violations, orphans(ctx, c.d, c.topo)...)
}

// saveStops writes every stop, with its cause, to path, for a run whose
// report lists only the first ones.
func saveStops(path string, stops []stop, start float64) {
	var b strings.Builder
	for _, s := range stops {
		fmt.Fprintf(&b, "%s: %s\n", s.Cause, s.String(start))
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}
