package main

import (
	"bufio"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

// linkHelpTemplate is the help template of the apps the links run
// (netexec, netkill, ...): urfave/cli's application template, their
// options named OPTIONS rather than GLOBAL OPTIONS.
var linkHelpTemplate = strings.ReplaceAll(cli.AppHelpTemplate, "GLOBAL OPTIONS", "OPTIONS")

// urfaveHelpPrinter is urfave/cli's own help printer, which printHelp
// falls back to.
var urfaveHelpPrinter = cli.HelpPrinter

func init() { cli.HelpPrinter = printHelp }

// printHelp is urfave/cli's help printer in this program (init). The help of a link's app
// (`netexec --help`) is written directly, the same text urfave/cli's
// template gives (TestLinkHelpAsTemplate holds them equal): parsing and
// running the template took about 40% of the instructions of
// `netexec --help`, as much as the start-up of every package of the
// binary together. Every other help goes through urfave/cli's template.
func printHelp(out io.Writer, templ string, data any) {
	// Both writers below write through a tab writer, which writes each
	// cell on its own: buffered, the page is one write(2), not hundreds.
	w := bufio.NewWriter(out)
	defer w.Flush()
	if app, ok := data.(*cli.App); ok && templ == linkHelpTemplate && plainLinkApp(app) {
		writeLinkHelp(w, app)
		return
	}
	urfaveHelpPrinter(w, templ, data)
}

// plainLinkApp reports whether app has only what writeLinkHelp writes:
// a usage text, no version shown, no authors, commands, flag categories
// or copyright. Anything else goes to the template.
func plainLinkApp(app *cli.App) bool {
	return app.UsageText != "" && (app.HideVersion || app.Version == "") &&
		len(app.Authors) == 0 && len(app.VisibleCommands()) == 0 &&
		len(app.VisibleFlagCategories()) == 0 && app.Copyright == ""
}

// writeLinkHelp writes linkHelpTemplate for app, which plainLinkApp
// accepts. The options go through the same tab writer urfave/cli uses,
// which aligns their usage texts. The text before them has no cell to
// align and passes through a tab writer unchanged, so it is written
// directly unless it holds one of the characters a tab writer acts on:
// the tab writer costs about 80 instructions a byte, and that text is
// most of the page (a tenth of the instructions of `netexec --help`).
func writeLinkHelp(out io.Writer, app *cli.App) {
	var b strings.Builder
	b.WriteString("NAME:\n   ")
	b.WriteString(wrapHelp(app.HelpName, 3))
	if app.Usage != "" {
		b.WriteString(" - ")
		b.WriteString(wrapHelp(app.Usage, len(app.HelpName)+6))
	}
	b.WriteString("\n\nUSAGE:\n   ")
	b.WriteString(wrapHelp(app.UsageText, 3))
	if app.Description != "" {
		b.WriteString("\n\nDESCRIPTION:\n   ")
		b.WriteString(wrapHelp(app.Description, 3))
	}
	head := b.String()
	if strings.ContainsAny(head, "\t\v\f") || strings.IndexByte(head, tabwriter.Escape) >= 0 {
		head = ""
	} else {
		b.Reset()
	}
	w := tabwriter.NewWriter(out, 1, 8, 2, ' ', 0)
	if flags := app.VisibleFlags(); len(flags) > 0 {
		b.WriteString("\n\nOPTIONS:")
		for _, f := range flags {
			b.WriteString("\n   ")
			b.WriteString(wrapHelp(f.String(), 6))
		}
	}
	b.WriteString("\n")
	_, _ = io.WriteString(out, head)
	_, _ = io.WriteString(w, b.String())
	_ = w.Flush()
}

// wrapHelp is the template's wrap function as urfave/cli calls it (lines
// are never wrapped, at 10000 columns): every non-empty line after the
// first is indented by offset spaces.
func wrapHelp(s string, offset int) string {
	lines := strings.Split(s, "\n")
	pad := strings.Repeat(" ", offset)
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}
