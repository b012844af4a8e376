package main

import (
	_ "embed"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask the command itself what may come next
// (urfave/cli's --generate-bash-completion), for netmgr and every link.
var (
	//go:embed completion/netmgr.bash
	bashCompletion string
	//go:embed completion/netmgr.zsh
	zshCompletion string
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		UsageText: "netmgr completion bash|zsh|fish",
		Description: "Prints a script that completes the commands, subcommands and options of\n" +
			"netmgr and of its links netexec, netkill, netstatus, reserve and unreserve.\n" +
			"Load it in the shell's start-up file:\n\n" +
			"   source <(netmgr completion bash)                         # ~/.bashrc\n" +
			"   source <(netmgr completion zsh)                          # ~/.zshrc\n" +
			"   netmgr completion fish > ~/.config/fish/completions/netmgr.fish\n\n" +
			"The bash and zsh scripts ask netmgr what may come next as you type, so they\n" +
			"follow the binary installed; the fish script lists every option and must be\n" +
			"written again after an upgrade.",
		BashComplete: func(cCtx *cli.Context) {
			if cCtx.NArg() == 0 {
				fmt.Fprintln(cCtx.App.Writer, "bash\nzsh\nfish")
			}
		},
		Action: func(cCtx *cli.Context) error {
			if cCtx.NArg() != 1 {
				return usagef("give one shell: bash, zsh or fish")
			}
			return writeCompletion(cCtx.App.Writer, cCtx.Args().First())
		},
	}
}

// writeCompletion writes the completion script for shell to w.
func writeCompletion(w io.Writer, shell string) error {
	var script string
	switch shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		var err error
		if script, err = fishCompletion(); err != nil {
			return err
		}
	default:
		return usagef("unknown shell %q: give bash, zsh or fish", shell)
	}
	if _, err := io.WriteString(w, script); err != nil {
		return fmt.Errorf("write completion script: %w", err)
	}
	return nil
}

// fishCompletion returns the fish completions of netmgr and of every link,
// one after the other.
func fishCompletion() (string, error) {
	var b strings.Builder
	for _, name := range append([]string{"netmgr"}, linkNames()...) {
		app, _ := newApp(name, nil)
		s, err := app.ToFishCompletion()
		if err != nil {
			return "", fmt.Errorf("make fish completion for %s: %w", name, err)
		}
		b.WriteString(s)
		b.WriteString("\n")
	}
	return b.String(), nil
}

// linkNames returns the names of the links to netmgr, sorted.
func linkNames() []string {
	names := make([]string, 0, len(linked))
	for n := range linked {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
