package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

func adminRaftCommand() *cli.Command {
	return &cli.Command{
		Name:      "raft",
		Usage:     "change the Raft configuration of the server group",
		UsageText: "netmgr admin raft remove [options] NAME",
		Description: "Servers join the group by themselves (netmgr server --join); a dead one stays\n" +
			"a voter until an administrator removes it:\n\n" +
			"   netmgr admin raft remove s4\n\n" +
			"netstatus -s lists the members with their role and health.",
		Subcommands: []*cli.Command{adminRaftRemoveCommand()},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unknown raft command %q (remove)", cCtx.Args().First())
			}
			_ = cli.ShowSubcommandHelp(cCtx)
			return usagef("no raft command given (remove)")
		},
		OnUsageError: onUsageError,
	}
}

func adminRaftRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:      "remove",
		Usage:     "remove a dead server from the Raft configuration",
		UsageText: "netmgr admin raft remove [options] NAME",
		Description: "Removes server NAME from the Raft configuration, so that the group's\n" +
			"majority no longer counts it. For example, after s4's machine died:\n\n" +
			"   $ netmgr admin raft remove s4\n" +
			"   server s4 removed from the raft configuration\n\n" +
			"Removal is for dead servers. The leader adds back any server that is alive\n" +
			"in the gossip pool, so the servers refuse to remove a live one: stop it\n" +
			"first (and do not restart it with the same name, or it rejoins). They also\n" +
			"refuse the leader itself: stop it, let the others elect a new leader, then\n" +
			"remove it. A NAME outside the configuration is an error. Only\n" +
			"administrators (admin_id) may remove servers.\n\n" + retryNote,
		Flags:        clientFlags(),
		Action:       runAdminRaftRemove,
		OnUsageError: onUsageError,
	}
}

func runAdminRaftRemove(cCtx *cli.Context) error {
	args := cCtx.Args().Slice()
	switch {
	case len(args) == 0:
		return usagef("missing server NAME")
	case strings.HasPrefix(args[0], "-"):
		return usagef("%q is not a server NAME", args[0])
	case len(args) > 1:
		if strings.HasPrefix(args[1], "-") {
			return usagef("options go before NAME, got %q after it", args[1])
		}
		return usagef("one server NAME at a time, got %q after it", args[1:])
	}
	name := args[0]
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	if err := c.RemoveServer(cCtx.Context, name); err != nil {
		return fmt.Errorf("remove server %s: %w", name, err)
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "server %s removed from the raft configuration\n", name)
	return err
}
