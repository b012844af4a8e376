//go:build !urfave_cli_no_docs

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"
)

// manBuilt tells whether this build can write the manual pages: not one
// with the tag urfave_cli_no_docs (man_nodocs.go).
const manBuilt = true

// manCommand is the hidden command `make man` runs: it writes the manual
// pages, generated from the same command definitions as --help.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "write the manual pages (section 1) into DIR",
		UsageText: "netmgr man DIR",
		Hidden:    true,
		Action: func(cCtx *cli.Context) error {
			if cCtx.NArg() != 1 {
				return usagef("give the directory to write the pages into, e.g. man/man1")
			}
			return writeManPages(cCtx.Args().First())
		},
	}
}

// manPages returns the manual pages by file name: netmgr.1 and one per
// link (netexec.1, ...).
func manPages() (map[string]string, error) {
	pages := map[string]string{}
	for _, name := range append([]string{"netmgr"}, linkNames()...) {
		app, _ := newApp(name, nil)
		app.Description = manText(app.Description)
		manTexts(app.Commands)
		md, err := app.ToMarkdown()
		if err != nil {
			return nil, fmt.Errorf("make man page %s: %w", name, err)
		}
		if name != "netmgr" {
			// A link's options are its only ones, as its --help says.
			md = strings.ReplaceAll(md, "# GLOBAL OPTIONS", "# OPTIONS")
		}
		md = "% " + name + " 1\n\n" + escapeProse(md)
		pages[name+".1"] = string(md2man.Render([]byte(md)))
	}
	return pages, nil
}

// manTexts applies manText to the descriptions of cmds and their
// subcommands.
func manTexts(cmds []*cli.Command) {
	for _, c := range cmds {
		c.Description = manText(c.Description)
		manTexts(c.Subcommands)
	}
}

// manText turns a --help description into the Markdown the man pages are
// made from: the examples and tables, indented by three spaces in --help,
// become code blocks, so they keep their lines.
func manText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "   ") {
			lines[i] = " " + l
		}
	}
	return strings.Join(lines, "\n")
}

// escapeProse escapes '<' outside code in Markdown md, which would
// otherwise start an HTML tag and swallow "job<ID>" or "nprocs<4".
func escapeProse(md string) string {
	lines := strings.Split(md, "\n")
	fenced := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "```"):
			fenced = !fenced
		case fenced || strings.HasPrefix(l, "    "):
		default:
			lines[i] = strings.ReplaceAll(l, "<", `\<`)
		}
	}
	return strings.Join(lines, "\n")
}

// writeManPages writes every manual page into dir, creating it.
func writeManPages(dir string) error {
	pages, err := manPages()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make man directory: %w", err)
	}
	for name, page := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644); err != nil {
			return fmt.Errorf("write man page: %w", err)
		}
	}
	return nil
}
