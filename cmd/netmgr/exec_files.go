package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
)

// Files in: netexec packs the copy_in files (and, with --copy-binary, the
// job's binaries) into one archive, sends it to the servers, which answer
// once a majority keep it, and submits the job naming it. Each file lands
// in the exec dir under its base name; a binary or an argument that names
// a copy_in file (./sim, ./data/in.txt) is rewritten to that name there
// (./sim, ./in.txt), so the job finds it where it runs.

// addCopyBinaries adds the job's binaries to its copy_in (--copy-binary):
// a BINARY without a slash is looked up in this machine's PATH.
func addCopyBinaries(js *client.JobSpec) error {
	for _, key := range slices.Sorted(maps.Keys(js.Binaries)) {
		p := js.Binaries[key]
		if !strings.Contains(p, "/") {
			found, err := exec.LookPath(p)
			if err != nil {
				return usagef("--copy-binary: %s: not found in this machine's PATH: %v", p, err)
			}
			if found, err = filepath.Abs(found); err != nil {
				return usagef("--copy-binary: %s: %v", p, err)
			}
			js.Binaries[key], p = found, found
		}
		if !slices.Contains(js.CopyIn, p) {
			js.CopyIn = append(js.CopyIn, p)
		}
	}
	return nil
}

// stageCopyIn packs js's copy_in files, named relative to cwd, and
// rewrites the binaries and arguments that name one of them (already
// resolved against cwd by resolvePaths) to its place in the exec dir. It
// returns the archive, nil when the job copies nothing in.
func stageCopyIn(js *client.JobSpec, cwd string) ([]byte, error) {
	if len(js.CopyIn) == 0 {
		return nil, nil
	}
	data, names, err := files.Pack(js.CopyIn, cwd, 0)
	if err != nil {
		return nil, usagef("%v", err)
	}
	place := make(map[string]string, len(js.CopyIn))
	for i, p := range js.CopyIn {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		place[filepath.Clean(p)] = "./" + names[i]
	}
	for key, b := range js.Binaries {
		if to, ok := place[filepath.Clean(b)]; ok && filepath.IsAbs(b) {
			js.Binaries[key] = to
		}
	}
	for i, a := range js.Args {
		if to, ok := place[filepath.Clean(a)]; ok && filepath.IsAbs(a) {
			js.Args[i] = to
		}
	}
	js.CopyIn = names
	js.CopyInBlob, js.CopyInSize = files.Sum(data), int64(len(data))
	return data, nil
}

// sendCopyIn has the servers keep a job's copy_in archive.
func sendCopyIn(ctx context.Context, c *client.Client, data []byte) error {
	if data == nil {
		return nil
	}
	if _, err := c.PutBlob(ctx, data); err != nil {
		return fmt.Errorf("send copy_in files (%s): %w", files.Size(int64(len(data))), err)
	}
	return nil
}
