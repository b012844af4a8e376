//go:build urfave_cli_no_docs

package main

import "github.com/urfave/cli/v2"

// manBuilt tells whether this build can write the manual pages.
const manBuilt = false

// manCommand is the hidden command `make man` runs. A build with the tag
// urfave_cli_no_docs (make build's) leaves the Markdown and roff
// generators out, whose package initialisation every command would pay
// for at start-up; `make man` runs the command from a build without it.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "write the manual pages (section 1) into DIR",
		UsageText: "netmgr man DIR",
		Hidden:    true,
		Action: func(*cli.Context) error {
			return usagef("this netmgr was built without the manual page generator (tag urfave_cli_no_docs, as make build does); run make man, or go run ./cmd/netmgr man DIR in the source tree")
		},
	}
}
