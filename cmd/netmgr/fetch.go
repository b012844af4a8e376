package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
)

func fetchCommand() *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "write the files a job kept (copy_out) into a directory",
		UsageText: "netmgr fetch [--instance N] JOB|ID [DIR]",
		Description: "Writes the copy_out files the servers kept for the job, the latest attempt's\n" +
			"of each instance, into DIR (default the current directory), one subdirectory\n" +
			"per instance (DIR/0, DIR/1, ...) when the job has several; --instance N takes\n" +
			"one instance's, into DIR itself. Each archive is checked against its sha256.\n" +
			"Files named in copy_out that were not kept (they matched nothing, or passed\n" +
			"the servers' --max-copy-size) are listed with why, and fetch then ends with\n" +
			"status 1. Only the job's owner or an admin may fetch. For example:\n\n" +
			"   netmgr fetch 42\n" +
			"   netmgr fetch --instance 2 sim results/\n\n" +
			"netexec --wait done fetches a job's copy_out itself.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "instance", Aliases: []string{"i"}, Value: -1, DefaultText: "all", Usage: "fetch only instance `N`'s files, from 0"},
		}, clientFlags()...),
		Action: runFetch,
	}
}

func runFetch(cCtx *cli.Context) error {
	args := cCtx.Args().Slice()
	switch {
	case len(args) == 0:
		return usagef("missing JOB or ID")
	case len(args) > 2:
		return usagef("want JOB|ID [DIR], got %d arguments", len(args))
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return usagef("options go before JOB|ID, got %q after it", a)
		}
	}
	dir := "."
	if len(args) == 2 {
		dir = args[1]
	}
	inst := cCtx.Int("instance")
	if inst < -1 {
		return usagef("--instance %d: instances are numbered from 0", inst)
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	job, err := c.Job(cCtx.Context, args[0])
	if err != nil {
		return fmt.Errorf("fetch job %s: %w", printable(args[0]), err)
	}
	if err := fetchOutputs(cCtx.Context, c, job, inst, dir, cCtx.App.Writer); err != nil {
		return fmt.Errorf("fetch job %d: %w", job.ID, err)
	}
	return nil
}

// errOutputsLost means some of a job's copy_out was not kept.
var errOutputsLost = errors.New("some outputs were not kept")

// fetchOutputs writes job's kept outputs (instance inst's, or every
// instance's when inst is -1) under dir, and says on w what it wrote.
func fetchOutputs(ctx context.Context, c *client.Client, job client.Job, inst int, dir string, w io.Writer) error {
	if len(job.Spec.CopyOut) == 0 {
		return fmt.Errorf("it names no copy_out files")
	}
	if inst >= len(job.Instances) {
		return fmt.Errorf("it has no instance %d (it has %d, numbered from 0)", inst, len(job.Instances))
	}
	perInstance := inst < 0 && len(job.Instances) > 1
	var lost []string
	for _, in := range job.Instances {
		if inst >= 0 && in.Index != inst {
			continue
		}
		o, ok := outputOf(job, in.Index)
		switch {
		case !ok && in.Finished():
			lost = append(lost, fmt.Sprintf("instance %d: nothing kept: it ended %s before its stub kept its files", in.Index, in.State))
			continue
		case !ok:
			lost = append(lost, fmt.Sprintf("instance %d: not ended yet (%s): nothing kept so far", in.Index, in.State))
			continue
		}
		for _, l := range o.Lost {
			lost = append(lost, fmt.Sprintf("instance %d: %s", in.Index, printable(l))) // the job named the files
		}
		if o.Blob == "" {
			continue
		}
		target := dir
		if perInstance {
			target = filepath.Join(dir, strconv.Itoa(in.Index))
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("instance %d: %w", in.Index, err)
		}
		data, err := c.Blob(ctx, o.Blob)
		if err != nil {
			return fmt.Errorf("instance %d: the files of attempt %d (%s): %w", in.Index, o.Attempt, files.Size(o.Size), err)
		}
		wrote, err := files.Unpack(data, target)
		if err != nil { // it names the archive's files, which the job named
			return fmt.Errorf("instance %d: %w", in.Index, &printableError{err})
		}
		// The file names are the job's: escaped, as is the rest.
		fmt.Fprintf(w, "instance %d: fetched %s into %s\n", in.Index, strings.Join(printableList(wrote), " "), printable(target))
	}
	if len(lost) > 0 {
		for _, l := range lost {
			fmt.Fprintf(w, "not kept: %s\n", l)
		}
		return fmt.Errorf("%w: %s", errOutputsLost, strings.Join(lost, "; "))
	}
	return nil
}

// outputOf returns the kept outputs of instance i of job.
func outputOf(job client.Job, i int) (client.Output, bool) {
	for _, o := range job.Outputs {
		if o.Instance == i {
			return o, true
		}
	}
	return client.Output{}, false
}
