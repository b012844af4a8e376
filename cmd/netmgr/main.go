package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed, or a job failed
	exitUsage = 2 // the command line was wrong
)

// usageError marks an error in how the command was invoked; it exits 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// linked maps the names netmgr answers to when reached through a link
// (argv[0]) to the subcommand they run.
var linked = map[string]func() *cli.Command{
	"netexec":   execCommand,
	"netkill":   killCommand,
	"netstatus": statusCommand,
	"reserve":   reserveCommand,
	"unreserve": unreserveCommand,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal starts a graceful stop, a second one kills.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args (args[0] is the program name, which picks
// the command for the netexec, netkill, ... links) and returns the exit
// code. Errors go to stderr prefixed with the command's name.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{"netmgr"}
	}
	app, prefix := newApp(filepath.Base(args[0]), args[1:])
	args = flagsFirst(app, args)
	app.Writer, app.ErrWriter = stdout, stderr
	ri := &runInfo{prefix: prefix}
	err := app.RunContext(withRunInfo(ctx, ri), args)
	if err == nil {
		return exitOK
	}
	var st *exitStatus
	if errors.As(err, &st) {
		return st.code // the job's own, as netexec -i and --pty exit with it
	}
	// The message quotes what users chose (job names, arguments, paths,
	// reasons), the servers' answers included: escaped, lines kept.
	fmt.Fprintf(stderr, "%s: %s\n", prefix, printableLines(err.Error()))
	printHint(ri, err, stderr)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", prefix)
		return exitUsage
	}
	return exitError
}

// newApp builds the application for the program name base and returns it
// with the prefix for its error messages: the link name ("netexec"), or
// "netmgr SUBCOMMAND", or "netmgr".
func newApp(base string, rest []string) (*cli.App, string) {
	if mk, ok := linked[base]; ok {
		cmd := mk()
		app := &cli.App{
			Name:            base,
			Usage:           cmd.Usage,
			UsageText:       cmd.UsageText,
			Description:     cmd.Description,
			Flags:           lightFlags(cmd.Flags),
			Action:          cmd.Action,
			HideHelpCommand: true,
		}
		setCommon(app)
		app.CustomAppHelpTemplate = linkHelpTemplate
		return app, base
	}
	app := &cli.App{
		Name:  "netmgr",
		Usage: "a replicated, fault-tolerant job scheduler for a pool of machines",
		UsageText: "netmgr COMMAND [options] [arguments...]\n\n" +
			"The job commands are also reached as netexec, netkill, netstatus,\n" +
			"reserve and unreserve through links to this binary.",
		Description: "netmgr runs jobs on a pool of Linux machines. Three or five `netmgr server`\n" +
			"processes keep the machine and job database replicated with Raft; a `netmgr stub`\n" +
			"on every machine starts the jobs. Try `netmgr agent --dev` for a one-process\n" +
			"cluster, then `netexec /bin/echo hello` and `netstatus`.",
		Commands: []*cli.Command{
			execCommand(), killCommand(), statusCommand(),
			reserveCommand(), unreserveCommand(),
			suspendCommand(), resumeCommand(), restartCommand(), logsCommand(), attachCommand(), shellCommand(), fetchCommand(), eventsCommand(), historyCommand(), shareCommand(), tlsCommand(),
			serverCommand(), stubCommand(), simCommand(), agentCommand(), adminCommand(), superviseCommand(),
			tokenCommand(), versionCommand(), completionCommand(), manCommand(),
		},
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Usage: "print the version, commit and command level (netmgr version)"},
		},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Bool("version") {
				return versionCommand().Action(cCtx)
			}
			if cCtx.Args().Present() {
				return usagef("unknown command %q", cCtx.Args().First())
			}
			_ = cli.ShowAppHelp(cCtx)
			return usagef("no command given")
		},
	}
	setCommon(app)
	prefix := "netmgr"
	for _, c := range app.Commands {
		c.OnUsageError = onUsageError
		if len(rest) > 0 && c.HasName(rest[0]) {
			prefix = "netmgr " + c.Name
		}
	}
	return app, prefix
}

// setCommon sets what every app shares: errors are returned to run rather
// than exiting inside urfave/cli, and flag errors are usage errors.
func setCommon(app *cli.App) {
	app.HideVersion = true
	app.EnableBashCompletion = true      // netmgr completion bash|zsh
	app.DisableSliceFlagSeparator = true // --env A=b,c is one entry
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.OnUsageError = onUsageError
}

func onUsageError(_ *cli.Context, err error, _ bool) error {
	return &usageError{err: err}
}

// flagsFirst lets every command but exec take its options after its
// arguments as well as before them (netstatus keep --json, reserve flute
// --for 2h, netmgr admin queue add Q --priority 5): urfave/cli v2's flag
// parser stops at the first argument that is not an option, so it moves
// the options of the command that args names (app's own, or the command
// and subcommands args[1:] begin with) ahead of the arguments. An option
// takes the next word as its value when the command defines it with a
// value and it has no '='; "--" ends the options, and what follows stays
// where it is. netexec and netmgr exec are returned as they are: what
// follows BINARY belongs to the job (netexec /bin/ls -l). So is a command
// line that names no command (or no subcommand of one that has them), and
// the shell-completion request urfave/cli expects last stays last.
func flagsFirst(app *cli.App, args []string) []string {
	if app.Name == "netexec" {
		return args
	}
	from, flags, cmds := 1, app.Flags, app.Commands
	for from < len(args) {
		c := findCommand(cmds, args[from])
		if c == nil {
			break
		}
		if c.Name == "exec" {
			return args
		}
		flags, cmds = c.Flags, c.Subcommands
		from++
	}
	if len(cmds) > 0 {
		return args // no command, or no subcommand, named: nothing to reorder
	}
	var opts, rest []string
	for i := from; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			i = len(args)
		case !strings.HasPrefix(a, "-") || a == "-":
			rest = append(rest, a)
		case a == "--generate-bash-completion" && i == len(args)-1:
			rest = append(rest, a)
		case strings.Contains(a, "=") || i == len(args)-1 || !takesValue(flags, a):
			opts = append(opts, a)
		default:
			opts = append(opts, a, args[i+1])
			i++
		}
	}
	out := append([]string{}, args[:from]...)
	return append(append(out, opts...), rest...)
}

// findCommand returns the command of cmds named or aliased name, or nil.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether option arg ("-n", "--for") is one of flags
// and takes a value; --help, a boolean option and an unknown one do not.
func takesValue(flags []cli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			tv, ok := f.(interface{ TakesValue() bool })
			return !ok || tv.TakesValue()
		}
	}
	return false
}
