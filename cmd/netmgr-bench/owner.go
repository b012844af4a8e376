package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// How many times the owner suite has the owner come back (quick: fewer),
// and the stub's --sleep-on-input: the machine wakes that long after the
// last touch, which paces the samples.
const (
	ownerSamples      = 20
	ownerSamplesQuick = 5
	ownerIdle         = time.Second
)

// ownerSuite measures how soon the owner policy suspends a running job
// when the machine's owner comes back: a stub watching a fake input
// device (--input-devices FILE --sleep-on-input 1s) runs a job; the
// benchmark touches the device, as a key press does, and times until the
// job's process is stopped (state T in /proc). After each sample the
// machine wakes once the device rests and the job runs on, and the next
// sample touches it again.
func ownerSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "owner")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	dev := filepath.Join(dir, "event0")
	if err := os.WriteFile(dev, nil, 0o644); err != nil {
		return nil, fmt.Errorf("owner: make the input device: %w", err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dev, old, old); err != nil {
		return nil, fmt.Errorf("owner: age the input device: %w", err)
	}
	fmt.Fprintf(os.Stderr, "owner: starting 1 server and 1 stub ...\n")
	c, err := startCluster(cfg, bin, filepath.Join(dir, "cluster"), 1, 1)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	fail := func(err error) ([]figure, error) {
		fmt.Fprintf(os.Stderr, "process logs:\n%s", c.Logs(4000))
		return nil, err
	}
	if err := c.WaitLeader(60 * time.Second); err != nil {
		return fail(err)
	}
	// The stub again, now watching the fake device.
	c.Stubs[0].Args = []string{"--input-devices", dev, "--sleep-on-input", ownerIdle.String()}
	if _, err := c.KillStubMachine(0); err != nil {
		return fail(err)
	}
	if err := c.RestartStub(0); err != nil {
		return fail(err)
	}
	cl, err := userClient(c)
	if err != nil {
		return fail(err)
	}
	machine := c.Stubs[0].Name
	if err := waitMachineState(ctx, cl, machine, client.MachineUp, 60*time.Second); err != nil {
		return fail(err)
	}
	job, err := cl.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"3600"},
	}})
	if err != nil {
		return fail(fmt.Errorf("owner: submit: %w", err))
	}
	defer func() { _, _ = cl.Kill(context.Background(), job.Name, client.KillRequest{}) }()
	pid, err := waitRunningPID(ctx, cl, job.Name)
	if err != nil {
		return fail(err)
	}
	n := ownerSamples
	if cfg.quick {
		n = ownerSamplesQuick
	}
	var lat []float64
	for i := range n {
		// Awake, and the job running (state S), before the owner returns.
		if err := waitMachineState(ctx, cl, machine, client.MachineUp, 30*time.Second); err != nil {
			return fail(fmt.Errorf("owner: sample %d: %w", i+1, err))
		}
		if err := pollUntil(ctx, 30*time.Second, func() bool { return procState(pid) != "T" }); err != nil {
			return fail(fmt.Errorf("owner: sample %d: job still stopped: %w", i+1, err))
		}
		touched := time.Now()
		if err := os.Chtimes(dev, touched, old); err != nil {
			return fail(fmt.Errorf("owner: touch the input device: %w", err))
		}
		if err := pollUntil(ctx, 30*time.Second, func() bool { return procState(pid) == "T" }); err != nil {
			return fail(fmt.Errorf("owner: sample %d: job not stopped: %w", i+1, err))
		}
		lat = append(lat, float64(time.Since(touched))/float64(time.Millisecond))
	}
	return []figure{{
		Name:   "owner returns: input to job suspended",
		Unit:   "ms",
		Sample: summarize(lat),
		Target: "p50 <= 1000 ms",
		Note: fmt.Sprintf("%d touches of a fake input device a stub watches (--sleep-on-input %v), each just after the machine woke; "+
			"the detectors look every 500 ms and a wake falls on one of their looks, so each touch waits nearly a whole interval: the worst case",
			n, ownerIdle),
	}}, nil
}

// waitMachineState polls until machine is in state.
func waitMachineState(ctx context.Context, cl *client.Client, machine, state string, timeout time.Duration) error {
	err := pollAPIUntil(ctx, timeout, func() bool {
		ms, err := cl.Machines(ctx)
		if err != nil {
			return false
		}
		for _, m := range ms {
			if m.Name == machine {
				return m.State == state
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("machine %s not %s: %w", machine, state, err)
	}
	return nil
}

// waitRunningPID polls until job name's first instance runs and returns
// its pid.
func waitRunningPID(ctx context.Context, cl *client.Client, name string) (int, error) {
	pid := 0
	err := pollAPIUntil(ctx, opTimeout, func() bool {
		j, err := cl.Job(ctx, name)
		if err != nil || len(j.Instances) == 0 || j.Instances[0].State != client.InstanceRunning {
			return false
		}
		pid = j.Instances[0].PID
		return pid != 0
	})
	if err != nil {
		return 0, fmt.Errorf("job %s not running: %w", name, err)
	}
	return pid, nil
}

// pollUntil calls cond every millisecond (procState reads /proc) until it
// holds, timeout passes or ctx ends; pollAPIUntil every 20 ms, to spare
// the servers.
func pollUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return pollEvery(ctx, time.Millisecond, timeout, cond)
}

func pollAPIUntil(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return pollEvery(ctx, 20*time.Millisecond, timeout, cond)
}

func pollEvery(ctx context.Context, every, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, servertest.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
	return nil
}

// procState is the state letter of process pid (R, S, T, ...), "" when
// it is gone.
func procState(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}
