package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
)

func adminCommand() *cli.Command {
	return &cli.Command{
		Name:      "admin",
		Usage:     "administer the pool: load the machine database, show it, change batch queues, the site policy",
		UsageText: "netmgr admin load [options] FILE\nnetmgr admin show [options]\nnetmgr admin queue add|set|remove [options] NAME\nnetmgr admin policy load|show|clear [options]",
		Description: "The database declares keys, machine types, machines, batch queues and\n" +
			"administrators in the paper's language, for example:\n\n" +
			"   key fpu /* Has hardware fpu */\n" +
			"   mtype sparc1+ = {sparc, mem=16, rating=8.0}\n" +
			"   machine bongo = {sparc1+, mem=32, mounts={/usr/fsys/fs1}}\n" +
			"   add_q NEW_Q = {nq_maxsize=120, nq_maxactive=100, nq_maxrun=200, nq_maxmem=20}\n" +
			"   admin_id tclark\n\n" +
			"A queue's kill_grace=S (seconds, or 45s, 2m) is the time from the SIGTERM that\n" +
			"ends one of its jobs (its time limit, netkill) to the SIGKILL; default 10s:\n\n" +
			"   add_q CKPT = {nq_maxrun=240, kill_grace=120}\n\n" +
			"A line allow_root_jobs lets root on a machine of the pool run jobs as root;\n" +
			"without it (the default) no job runs as root.\n\n" +
			"   netmgr admin load isis.db   replace the live database with the file's, at once\n" +
			"   netmgr admin show           print the live database in the same language\n" +
			"   netmgr admin queue add NEW_Q --max-active 100 --max-run 200\n" +
			"                               add, set or remove one batch queue at run time\n" +
			"   netmgr admin policy load site.star\n" +
			"                               install a site policy script (admin policy --help)",
		Subcommands: []*cli.Command{adminLoadCommand(), adminShowCommand(), adminQueueCommand(), adminPolicyCommand(), adminRaftCommand()},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unknown admin command %q (load, show, queue or policy)", cCtx.Args().First())
			}
			_ = cli.ShowSubcommandHelp(cCtx)
			return usagef("no admin command given (load, show, queue or policy)")
		},
	}
}

func adminLoadCommand() *cli.Command {
	return &cli.Command{
		Name:      "load",
		Usage:     "replace the live database with the declarations in FILE",
		UsageText: "netmgr admin load [options] FILE",
		Description: "Parses FILE first and, if it has errors, prints them as FILE:LINE:COL: message\n" +
			"and sends nothing. Otherwise the servers replace the database with it as one\n" +
			"replicated command: all of it or, on any error, none of it. Running jobs are\n" +
			"left alone; a machine declared before and not in FILE is drained (it takes no\n" +
			"new work). It prints what was loaded:\n\n" +
			"   loaded isis.db: 9 keys, 5 mtypes, 3 machines, 1 queue (index 42)\n" +
			"   draining: oboe\n\n" + retryNote,
		Flags:        clientFlags(),
		Action:       runAdminLoad,
		OnUsageError: onUsageError,
	}
}

func adminShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print the live database in the declaration language",
		UsageText: "netmgr admin show [options]",
		Description: "Prints the live database as the servers hold it, in the language admin load\n" +
			"reads, so 'netmgr admin show > db && netmgr admin load db' changes nothing.\n\n" + retryNote,
		Flags:        clientFlags(),
		Action:       runAdminShow,
		OnUsageError: onUsageError,
	}
}

// oneFileArg reads the one FILE command (named as in its usage errors)
// takes, what naming its content for the read error.
func oneFileArg(cCtx *cli.Context, command, what string) (string, []byte, error) {
	args := cCtx.Args().Slice()
	switch {
	case len(args) == 0:
		return "", nil, usagef("missing FILE")
	case len(args) > 1:
		if strings.HasPrefix(args[1], "-") {
			return "", nil, usagef("options go before FILE, got %q after it", args[1])
		}
		return "", nil, usagef("%s takes one FILE, got %q after it", command, args[1:])
	}
	src, err := os.ReadFile(args[0])
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w", what, err)
	}
	return args[0], src, nil
}

func runAdminLoad(cCtx *cli.Context) error {
	file, src, err := oneFileArg(cCtx, "admin load", "database")
	if err != nil {
		return err
	}
	if err := checkDatabase(cCtx, file, src); err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	resp, err := c.LoadDatabase(cCtx.Context, client.DatabaseText{Filename: file, Text: string(src)})
	if err != nil {
		return fmt.Errorf("load database %s: %w", file, err)
	}
	return writeLoaded(cCtx.App.Writer, file, resp)
}

// checkDatabase parses the database locally so that its errors come at
// once, one FILE:LINE:COL: message per line on stderr, without a server.
func checkDatabase(cCtx *cli.Context, file string, src []byte) error {
	_, err := dblang.Parse(file, src)
	if err == nil {
		return nil
	}
	var list dblang.ErrorList
	if !errors.As(err, &list) {
		return fmt.Errorf("parse database %s: %w", file, err)
	}
	fmt.Fprintln(cCtx.App.ErrWriter, printableLines(list.Error())) // it quotes the file
	n := "1 error"
	if len(list) != 1 {
		n = fmt.Sprintf("%d errors", len(list))
	}
	return fmt.Errorf("%s: %s, nothing loaded", file, n)
}

// writeLoaded prints what a load did: "loaded isis.db: 9 keys, 5 mtypes,
// 3 machines, 1 queue (index 42)" and the machines it drained.
func writeLoaded(w io.Writer, file string, r client.LoadResponse) error {
	count := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	if _, err := fmt.Fprintf(w, "loaded %s: %s, %s, %s, %s (index %d)\n", file,
		count(r.Keys, "key"), count(r.MTypes, "mtype"), count(r.Machines, "machine"), count(r.Queues, "queue"), r.Index); err != nil {
		return err
	}
	if len(r.Draining) > 0 {
		if _, err := fmt.Fprintf(w, "draining: %s\n", strings.Join(r.Draining, ", ")); err != nil {
			return err
		}
	}
	return nil
}

func runAdminShow(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q (admin show takes only options)", cCtx.Args().First())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	db, err := c.Database(cCtx.Context)
	if err != nil {
		return fmt.Errorf("get database: %w", err)
	}
	text := db.Text
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, err = fmt.Fprint(cCtx.App.Writer, text)
	return err
}
