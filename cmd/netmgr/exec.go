package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:  "exec",
		Usage: "submit a job: run a binary on machines of the pool",
		UsageText: "netexec [options] BINARY [ARG...]\n" +
			"netexec [options] 'SPEC'\n" +
			"netmgr exec [options] BINARY [ARG...]",
		Description: "Submits a job and prints its name and id. The job is either a binary and its\n" +
			"arguments, run on any machine, or one job specification string in the paper's\n" +
			"language (options binaries, min, symb_name, env, args):\n\n" +
			"   netexec -n 3 --name hello /bin/sh -c 'echo hi from $(hostname)'\n" +
			"   netexec 'binaries={x86_64=/bin/sh},min=3,symb_name=job1,env={\"A=b\"},args={-c,\"echo hi\"}'\n\n" +
			"Options go before BINARY; everything after it is passed to the job ('--' also\n" +
			"ends the options). A flag may not set what the spec string sets too.\n\n" +
			"--wait started prints where each instance runs; --wait done prints how each\n" +
			"ended and exits 1 if any did not exit 0.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "instances", Aliases: []string{"n"}, DefaultText: "1", Usage: "run `N` instances (the spec's min=N)"},
			&cli.StringFlag{Name: "name", Usage: "symbolic job `NAME` (the spec's symb_name=); the server picks job<ID> when not given"},
			&cli.StringSliceFlag{Name: "env", Usage: "add `NAME=value` to the job's environment (repeatable)"},
			&cli.StringFlag{Name: "wait", Usage: "wait until the instances have started or are done (`WHEN`: started|done) and report them"},
		}, clientFlags()...),
		Action: runExec,
	}
}

// execArgs is netexec's command line after flag parsing.
type execArgs struct {
	Positional []string
	// Instances is -n; InstancesSet tells whether it was given at all.
	Instances    int
	InstancesSet bool
	Name         string
	Env          []string
}

// specStringRE matches the start of a spec string: an option name and '='.
var specStringRE = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)

// isSpecString reports whether arg is a job spec string rather than a
// binary: it starts with word=.
func isSpecString(arg string) bool { return specStringRE.MatchString(arg) }

// buildSpec turns netexec's arguments into a job spec. Every error is a
// usage error.
func buildSpec(a execArgs) (client.JobSpec, error) {
	if len(a.Positional) == 0 {
		return client.JobSpec{}, usagef("missing BINARY or job spec string")
	}
	var js client.JobSpec
	if isSpecString(a.Positional[0]) {
		if len(a.Positional) > 1 {
			if strings.HasPrefix(a.Positional[1], "-") {
				return js, usagef("options go before the job spec string, got %q after it", a.Positional[1])
			}
			return js, usagef("a job spec string takes no further arguments, got %q after it", a.Positional[1:])
		}
		var err error
		if js, err = spec.Parse(a.Positional[0]); err != nil {
			return js, &usageError{err: err}
		}
		switch {
		case a.InstancesSet && js.Min != 0:
			return js, usagef("-n/--instances and min= in the spec string both set the number of instances; use one")
		case a.Name != "" && js.Name != "":
			return js, usagef("--name and symb_name= in the spec string both set the job name; use one")
		case len(a.Env) > 0 && len(js.Env) > 0:
			return js, usagef("--env and env= in the spec string both set the environment; use one")
		}
	} else {
		js.Binaries = map[string]string{client.AnyKey: a.Positional[0]}
		if len(a.Positional) > 1 {
			js.Args = append([]string(nil), a.Positional[1:]...)
		}
	}
	if a.InstancesSet {
		if a.Instances < 1 {
			return js, usagef("-n/--instances must be at least 1, got %d", a.Instances)
		}
		js.Min = a.Instances
	}
	if a.Name != "" {
		if err := spec.CheckName(a.Name); err != nil {
			return js, usagef("--name: %w", err)
		}
		js.Name = a.Name
	}
	for _, e := range a.Env {
		if err := spec.CheckEnv(e); err != nil {
			return js, usagef("--env: %w", err)
		}
	}
	if len(a.Env) > 0 {
		js.Env = append([]string(nil), a.Env...)
	}
	if err := spec.Validate(js); err != nil {
		return js, &usageError{err: err}
	}
	return js, nil
}

func runExec(cCtx *cli.Context) error {
	wait := cCtx.String("wait")
	if wait != "" && wait != client.WaitStarted && wait != client.WaitDone {
		return usagef("--wait must be %q or %q, got %q", client.WaitStarted, client.WaitDone, wait)
	}
	js, err := buildSpec(execArgs{
		Positional:   cCtx.Args().Slice(),
		Instances:    cCtx.Int("instances"),
		InstancesSet: cCtx.IsSet("instances"),
		Name:         cCtx.String("name"),
		Env:          cCtx.StringSlice("env"),
	})
	if err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	resp, err := c.Submit(cCtx.Context, client.SubmitRequest{Spec: js})
	if err != nil {
		return fmt.Errorf("submit job: %w", err)
	}
	w := cCtx.App.Writer
	fmt.Fprintf(w, "job %s.%s id %d submitted\n", resp.Name, resp.Owner, resp.ID)
	if wait == "" {
		return nil
	}
	job, err := c.WaitJob(cCtx.Context, strconv.FormatUint(resp.ID, 10), wait)
	if err != nil {
		return fmt.Errorf("wait for job %d: %w", resp.ID, err)
	}
	bad := writeOutcomes(w, job)
	if wait == client.WaitDone && bad > 0 {
		return fmt.Errorf("%d of %d instances of job %d did not exit 0", bad, len(job.Instances), resp.ID)
	}
	return nil
}

// writeOutcomes prints one line per instance of job, in instance order, and
// returns how many instances did not exit 0 (running ones count as fine).
func writeOutcomes(w io.Writer, job client.Job) int {
	ins := append([]client.Instance(nil), job.Instances...)
	sort.Slice(ins, func(i, j int) bool { return ins[i].Index < ins[j].Index })
	bad := 0
	for _, in := range ins {
		fmt.Fprintf(w, "instance %d: %s\n", in.Index, describeInstance(in))
		if in.Finished() && (in.State != client.InstanceExited || in.ExitCode != 0) {
			bad++
		}
	}
	return bad
}

// describeInstance says where an instance is and how it ended, e.g.
// "running on stub1 pid 4242" or "failed exit 3 on stub2".
func describeInstance(in client.Instance) string {
	on := ""
	if in.Machine != "" {
		on = " on " + in.Machine
	}
	switch in.State {
	case client.InstanceRunning:
		return fmt.Sprintf("running%s pid %d", on, in.PID)
	case client.InstanceExited:
		return fmt.Sprintf("exited %d%s", in.ExitCode, on)
	case client.InstanceFailed:
		if in.Error != "" {
			return fmt.Sprintf("failed%s: %s", on, in.Error)
		}
		return fmt.Sprintf("failed exit %d%s", in.ExitCode, on)
	case client.InstanceSignaled:
		return fmt.Sprintf("signaled %s%s", orDash(in.Signal), on)
	case client.InstanceKilled:
		if in.Signal != "" {
			return fmt.Sprintf("killed (%s)%s", in.Signal, on)
		}
		return "killed" + on
	default: // queued, placed, lost and states this CLI does not know yet
		return in.State + on
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
