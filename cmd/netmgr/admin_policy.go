package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/policy"
)

func adminPolicyCommand() *cli.Command {
	return &cli.Command{
		Name:      "policy",
		Usage:     "load, show or clear the site policy script",
		UsageText: "netmgr admin policy load [options] FILE\nnetmgr admin policy show [options]\nnetmgr admin policy clear [options]",
		Description: "A site policy is a Starlark script (deterministic, sandboxed, no I/O) with\n" +
			"two optional functions: admit(job, user) at submit returns None (accept), a\n" +
			"string (refuse with it) or a dict changing queue or time_limit;\n" +
			"priority(job, user, usage, now) returns a number that orders waiting work\n" +
			"within a queue, highest first, in place of fair share. A call that fails or\n" +
			"runs out of steps is a policy-error event (netmgr events) and the built-in\n" +
			"order or acceptance applies. For example:\n\n" +
			"   def admit(job, user):\n" +
			"       if job[\"instances\"] > 100:\n" +
			"           return \"at most 100 instances per job\"\n" +
			"   def priority(job, user, usage, now):\n" +
			"       return -job[\"time_limit\"]   # short jobs first\n\n" +
			"   netmgr admin policy load site.star   check FILE here, then install it\n" +
			"   netmgr admin policy show             print the script, who loaded it, when\n" +
			"   netmgr admin policy clear            remove it",
		Subcommands: []*cli.Command{
			{Name: "load", Usage: "check FILE and install it as the site policy", UsageText: "netmgr admin policy load [options] FILE",
				Description: "Compiles FILE first and, on an error, prints FILE:LINE:COL: message and\n" +
					"sends nothing; the server checks it again before one replicated command\n" +
					"installs it. Admins only.\n\n" + retryNote,
				Flags: clientFlags(), Action: runPolicyLoad, OnUsageError: onUsageError},
			{Name: "show", Usage: "print the site policy script", UsageText: "netmgr admin policy show [options]",
				Description: "Prints who loaded the script, when and at which index, then the script.\n" +
					"Admins only.\n\n" + retryNote,
				Flags: clientFlags(), Action: runPolicyShow, OnUsageError: onUsageError},
			{Name: "clear", Usage: "remove the site policy script", UsageText: "netmgr admin policy clear [options]",
				Description: "Removes the script; the built-in order and acceptance apply. Admins only.\n\n" + retryNote,
				Flags:       clientFlags(), Action: runPolicyClear, OnUsageError: onUsageError},
		},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unknown admin policy command %q (load, show or clear)", cCtx.Args().First())
			}
			_ = cli.ShowSubcommandHelp(cCtx)
			return usagef("no admin policy command given (load, show or clear)")
		},
	}
}

func runPolicyLoad(cCtx *cli.Context) error {
	file, src, err := oneFileArg(cCtx, "admin policy load", "policy")
	if err != nil {
		return err
	}
	if _, err := policy.Compile(string(src)); err != nil {
		var pe *policy.Error
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d:%d: %s, nothing loaded", file, pe.Line, pe.Col, printableLines(pe.Msg))
		}
		return fmt.Errorf("%s: %w, nothing loaded", file, err)
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	resp, err := c.LoadPolicy(cCtx.Context, client.PolicyRequest{Source: string(src)})
	if err != nil {
		return fmt.Errorf("load policy %s: %w", file, err)
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "loaded site policy %s (index %d)\n", file, resp.Index)
	return err
}

func runPolicyShow(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("admin policy show takes no arguments, got %q", cCtx.Args().Slice())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	p, err := c.Policy(cCtx.Context)
	if err != nil {
		return fmt.Errorf("show policy: %w", err)
	}
	if p.Source == "" {
		_, err = fmt.Fprintln(cCtx.App.Writer, "no site policy: the built-in order and acceptance apply")
		return err
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "# loaded by %s at %s (index %d)\n%s", printable(p.By),
		p.LoadedAt.UTC().Format("2006-01-02 15:04:05Z"), p.LoadIndex, printableLines(strings.TrimRight(p.Source, "\n")+"\n"))
	return err
}

func runPolicyClear(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("admin policy clear takes no arguments, got %q", cCtx.Args().Slice())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	resp, err := c.LoadPolicy(cCtx.Context, client.PolicyRequest{Clear: true})
	if err != nil {
		return fmt.Errorf("clear policy: %w", err)
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "cleared the site policy (index %d)\n", resp.Index)
	return err
}
