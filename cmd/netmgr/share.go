package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

func shareCommand() *cli.Command {
	return &cli.Command{
		Name:      "share",
		Usage:     "show fair share: each account and user with its share, decayed usage, factor and work",
		UsageText: "netmgr share [--json]",
		Description: "Lists the fair-share accounts, each followed by its users, as Slurm's sshare\n" +
			"does:\n\n" +
			"   ACCOUNT  USER   SHARE  USAGE  FACTOR  RUNNING  WAITING\n" +
			"   default         1      7260   0.50    2        198\n" +
			"   default  alice  1      7260   0.50    2        198\n" +
			"   default  bob    1      0      1.00    0        1\n\n" +
			"USAGE is slot-seconds (one instance running one second is one) charged when\n" +
			"each attempt ends and decayed with the database's fairshare_halflife (7 days\n" +
			"unless it says otherwise). FACTOR is 2^(-usage/share), each as a fraction of\n" +
			"its total: an account's among accounts, a user's within its account; 1 is\n" +
			"unused, lower is more used. Within a queue priority, waiting work goes in the\n" +
			"order of the account's factor, then the user's, then submission. RUNNING and\n" +
			"WAITING count instances over every queue. Accounts and shares are declared in\n" +
			"the database (netmgr admin load):\n\n" +
			"   account physics = {share=10, users={alice, bob}}\n" +
			"   share alice = 2\n" +
			"   fairshare_halflife = 7d\n\n" +
			"A user in no account is in default. --json prints the report as one object\n" +
			"with keys on, halflife_seconds and rows (account, user, share, usage, factor,\n" +
			"running, waiting).\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		}, clientFlags()...),
		Action: runShare,
	}
}

func runShare(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q (share takes only options)", cCtx.Args().First())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	rep, err := c.Share(cCtx.Context)
	if err != nil {
		return fmt.Errorf("share: %w", err)
	}
	if cCtx.Bool("json") {
		return writeJSON(cCtx.App.Writer, rep)
	}
	return renderShare(cCtx.App.Writer, rep)
}

// renderShare writes the netmgr share table, and a line when fair share
// is not on yet.
func renderShare(w io.Writer, rep client.ShareReport) error {
	if !rep.On {
		fmt.Fprintln(w, "fair share is not on yet: it starts once every server runs a build that has it; work waits in submit order")
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "ACCOUNT\tUSER\tSHARE\tUSAGE\tFACTOR\tRUNNING\tWAITING")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%d\t%d\n", printable(r.Account), printable(r.User), r.Share,
			strconv.FormatFloat(r.Usage, 'f', 0, 64), r.Factor, r.Running, r.Waiting)
	}
	return tw.Flush()
}
