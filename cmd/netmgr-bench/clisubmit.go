package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The CLI-submit suite's shape: cliShells shells at once, each running
// netexec cliPerShell times in a loop, cliRounds times (quick: fewer).
const (
	cliShells        = 8
	cliPerShell      = 50
	cliPerShellQuick = 15
	cliRounds        = 5
	cliRoundsQuick   = 3
	cliShellTimeout  = 5 * time.Minute
)

// cliSubmitSuite measures submitting through the command users type, as
// a user scripting many submits does (issue 20 point 11): cliShells
// concurrent shells each run `netexec /bin/true` in a loop, through the
// first stub's socket as a pool machine's user does (in a secure
// cluster; straight to the servers under -insecure). Each round's figure
// is the submits of all shells over the round's wall time; the CPU the
// shells and their netexec processes used (the rusage of the waited
// shells) over the submits is the client's cost of one submit. The same
// jobs through one `netexec --batch -` per shell, and through the Go
// client with as many clients, put the figure beside the request's own
// cost. The stubs are drained, so the jobs queue and only acceptance is
// measured, as Slurm's sbatch only queues. Where sbatch is installed
// and its cluster answers, the same shells loop `sbatch --hold --wrap
// /bin/true` in each round too (held jobs only queue), for the figure the
// issue compares with; otherwise the suite says why it has no sbatch
// figure.
func cliSubmitSuite(ctx context.Context, cfg config) ([]figure, error) {
	dir, bin, cleanup, err := benchSetup(cfg, "clisubmit")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		return nil, fmt.Errorf("clisubmit: %w", err)
	}
	netexec := filepath.Join(links, "netexec")
	if err := os.Symlink(bin, netexec); err != nil {
		return nil, fmt.Errorf("clisubmit: %w", err)
	}
	spec := clusterSpec{suite: "clisubmit", servers: cfg.servers, stubs: 1, database: benchDB}
	return withCluster(ctx, cfg, bin, dir, spec, func(c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
		return cliSubmitOn(ctx, cfg, netexec, c, cl)
	})
}

// cliSubmitOn is cliSubmitSuite on c, a ready cluster, through cl and
// netexec, a link to the netmgr binary.
func cliSubmitOn(ctx context.Context, cfg config, netexec string, c *servertest.ProcCluster, cl *client.Client) ([]figure, error) {
	perShell, rounds := cliPerShell, cliRounds
	if cfg.quick {
		perShell, rounds = cliPerShellQuick, cliRoundsQuick
	}
	env := append(os.Environ(), c.Env()...)
	job := trueBinary()
	loop := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do "$0" %s >/dev/null 2>&1 || exit 1; i=$((i+1)); done`, perShell, job)
	lines := strings.Repeat(job+"\n", perShell)
	batch := `"$0" --batch - >/dev/null 2>&1`

	sbatch, why := probeSbatch(ctx)
	if sbatch == "" {
		fmt.Fprintf(os.Stderr, "clisubmit: no sbatch figures: %s\n", why)
	}
	sbatchLoop := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do "$0" --hold --job-name=%s --output=/dev/null --wrap %s >/dev/null 2>&1 || exit 1; i=$((i+1)); done`,
		perShell, sbatchJobName, job)

	var loopRate, loopCPU, batchRate, apiRate, sbatchRate, sbatchCPU []float64
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "clisubmit: round %d of %d: %d shells x %d netexec ...\n", r+1, rounds, cliShells, perShell)
		el, cpu, err := runShells(ctx, netexec, loop, "", env)
		if err != nil {
			return nil, err
		}
		n := float64(cliShells * perShell)
		loopRate = append(loopRate, n/el.Seconds())
		loopCPU = append(loopCPU, float64(cpu)/float64(time.Millisecond)/n)

		el, _, err = runShells(ctx, netexec, batch, lines, env)
		if err != nil {
			return nil, err
		}
		batchRate = append(batchRate, n/el.Seconds())

		start := time.Now()
		if err := apiSubmits(ctx, cl, job, cliShells, perShell); err != nil {
			return nil, err
		}
		apiRate = append(apiRate, n/time.Since(start).Seconds())

		if sbatch != "" {
			el, cpu, err := runShells(ctx, sbatch, sbatchLoop, "", os.Environ())
			cancelSbatchJobs(ctx)
			if err != nil {
				return nil, err
			}
			sbatchRate = append(sbatchRate, n/el.Seconds())
			sbatchCPU = append(sbatchCPU, float64(cpu)/float64(time.Millisecond)/n)
		}
	}
	mode := "through the stub's socket"
	if !c.Secure() {
		mode = "straight to the servers (insecure)"
	}
	note := fmt.Sprintf("%d rounds of %d shells x %d submits of %s, %s; %d servers, the stub drained (acceptance only)",
		rounds, cliShells, perShell, job, mode, cfg.servers)
	figs := []figure{
		{Name: fmt.Sprintf("CLI submits per s, %d shells looping netexec", cliShells), Unit: "jobs/s",
			Sample: summarize(loopRate), Target: ">= sbatch's on the machine (557 in issue 20)", Note: note},
		{Name: "CLI CPU per netexec submit (process and shell)", Unit: "ms", Sample: summarize(loopCPU)},
		{Name: fmt.Sprintf("CLI submits per s, %d shells each one netexec --batch", cliShells), Unit: "jobs/s",
			Sample: summarize(batchRate)},
		{Name: fmt.Sprintf("API submits per s, %d Go clients, same jobs", cliShells), Unit: "jobs/s",
			Sample: summarize(apiRate)},
	}
	if sbatch != "" {
		figs = append(figs,
			figure{Name: fmt.Sprintf("sbatch submits per s, %d shells looping sbatch --hold", cliShells), Unit: "jobs/s",
				Sample: summarize(sbatchRate), Note: "the same rounds, Slurm's sbatch on this machine"},
			figure{Name: "CPU per sbatch submit (process and shell)", Unit: "ms", Sample: summarize(sbatchCPU)})
	}
	return figs, nil
}

// sbatchJobName names the held jobs the suite gives Slurm, so that it
// cancels only those.
const sbatchJobName = "netmgr-bench-clisubmit"

// probeSbatch returns the path of sbatch if it is installed and submits
// a held job now (then cancelled), else "" and why not.
func probeSbatch(ctx context.Context) (path, why string) {
	path, err := exec.LookPath("sbatch")
	if err != nil {
		return "", "sbatch is not installed (Slurm's slurm-client), so there is nothing to compare with"
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(pctx, path, "--hold", "--job-name="+sbatchJobName, "--output=/dev/null", "--wrap", trueBinary()).CombinedOutput()
	cancelSbatchJobs(ctx)
	if err != nil {
		return "", fmt.Sprintf("%s --hold --wrap %s failed (no Slurm controller answering?): %v: %s",
			path, trueBinary(), err, strings.TrimSpace(string(out)))
	}
	return path, ""
}

// cancelSbatchJobs cancels the suite's held Slurm jobs, if scancel is
// there; a failure only leaves held jobs queued.
func cancelSbatchJobs(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = exec.CommandContext(cctx, "scancel", "--name="+sbatchJobName).Run()
}

// runShells runs cliShells shells `sh -c script netexec` at once, with
// stdin on each, and returns the wall time until the last ended and the
// CPU time they used with their children.
func runShells(ctx context.Context, netexec, script, stdin string, env []string) (time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cliShellTimeout)
	defer cancel()
	cmds := make([]*exec.Cmd, cliShells)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script, netexec)
		cmd.Env = env
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		cmds[i] = cmd
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards first and cpu
		first error
		cpu   time.Duration
	)
	start := time.Now()
	for i, cmd := range cmds {
		wg.Go(func() {
			out, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("clisubmit: shell %d: %w: %s", i, err, out)
			}
			if ps := cmd.ProcessState; ps != nil {
				cpu += ps.UserTime() + ps.SystemTime()
			}
		})
	}
	wg.Wait()
	return time.Since(start), cpu, first
}

// apiSubmits submits perClient jobs of bin from each of clients
// goroutines through cl, each waiting for its answer before the next.
func apiSubmits(ctx context.Context, cl *client.Client, bin string, clients, perClient int) error {
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: bin}, Min: 1}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards first
		first error
	)
	for range clients {
		wg.Go(func() {
			for range perClient {
				sctx, cancel := context.WithTimeout(ctx, opTimeout)
				_, err := cl.Submit(sctx, client.SubmitRequest{Spec: spec})
				cancel()
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("clisubmit: API submit: %w", err)
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
