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
	args = flagsFirst(args)
	app, prefix := newApp(filepath.Base(args[0]), args[1:])
	app.Writer, app.ErrWriter = stdout, stderr
	ri := &runInfo{prefix: prefix}
	err := app.RunContext(withRunInfo(ctx, ri), args)
	if err == nil {
		return exitOK
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
			suspendCommand(), resumeCommand(), restartCommand(), logsCommand(), fetchCommand(), eventsCommand(), historyCommand(), tlsCommand(),
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

// flagsFirst lets the options of reserve, unreserve and admin queue
// add|set|remove come after their MACHINE or NAME arguments as well as
// before them: it moves the options ahead of the arguments, since the flag
// parser stops at the first argument that is not an option. Every option
// of these commands takes a value, written apart or after '=', except
// --help; "--" ends the options. Other command lines (netexec passes what
// follows BINARY to the job) are returned as they are.
func flagsFirst(args []string) []string {
	from := 0 // index of the command's first option or argument
	switch base := filepath.Base(args[0]); {
	case base == "reserve" || base == "unreserve":
		from = 1
	case linked[base] != nil || len(args) < 2: // netexec, netkill, netstatus; or no command
	case args[1] == "reserve" || args[1] == "unreserve":
		from = 2
	case len(args) >= 4 && args[1] == "admin" && args[2] == "queue" &&
		(args[3] == "add" || args[3] == "set" || args[3] == "remove"):
		from = 4
	}
	if from == 0 {
		return args
	}
	var flags, rest []string
	for i := from; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			i = len(args)
		case !strings.HasPrefix(a, "-") || a == "-":
			rest = append(rest, a)
		case strings.Contains(a, "=") || a == "-h" || a == "--help" || a == "-help" || i == len(args)-1:
			flags = append(flags, a)
		default:
			flags = append(flags, a, args[i+1])
			i++
		}
	}
	out := append([]string{}, args[:from]...)
	return append(append(out, flags...), rest...)
}
