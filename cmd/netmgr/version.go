package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/buildinfo"
)

// The build's version and commit, set at link time by the Makefile
// (-ldflags "-X main.version=$(git describe --always --dirty) -X
// main.commit=$(git rev-parse HEAD)"); empty in other builds, which then
// report what Go recorded.
var version, commit string

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print the build's version, commit and command level",
		UsageText: "netmgr version\nnetmgr --version",
		Description: "Prints this binary's version (git describe of the tree it was built from, or\n" +
			"devel), its commit (with '(modified)' when the tree had uncommitted changes),\n" +
			"its command level (the newest Raft log command it applies; a group proposes a\n" +
			"newer command only once every server has it) and its Go toolchain. netstatus -s\n" +
			"shows the version each server runs.",
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unexpected argument %q", cCtx.Args().First())
			}
			return printVersion(cCtx.App.Writer, buildinfo.Get(version, commit), int(fsm.CommandLevel))
		},
	}
}

// printVersion writes what netmgr version prints for info and level.
func printVersion(w io.Writer, info buildinfo.Info, level int) error {
	commit := info.Commit
	if commit == "" {
		commit = "unknown"
	}
	if info.Modified {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "netmgr %s\ncommit %s\ncommand level %d\n%s\n", info.Version, commit, level, info.Go)
	if err != nil {
		return fmt.Errorf("print version: %w", err)
	}
	return nil
}
