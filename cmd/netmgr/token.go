package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// tokenTimeLayout prints a token's times in UTC to the minute.
const tokenTimeLayout = "2006-01-02T15:04Z"

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "issue, list and revoke API tokens for users outside the pool (admins)",
		UsageText: "netmgr token create --user USER [--ttl DURATION] [--quiet]\n" +
			"netmgr token list [--json]\n" +
			"netmgr token revoke ID",
		Description: "An API token lets a user reach the servers from a machine outside the pool\n" +
			"(a laptop, a program, a dashboard): every request that carries it acts as\n" +
			"the user it was issued for, until it expires or is revoked. On a machine\n" +
			"of the pool no token is needed. Only administrators (admin_id, or root)\n" +
			"issue, list and revoke tokens:\n\n" +
			"   netmgr token create --user alice --ttl 90d\n" +
			"   netmgr token list\n" +
			"   netmgr token revoke 3f9a12bc\n\n" +
			"The servers keep only a hash of each token: it is shown once, when it is\n" +
			"created, and a lost token is revoked and replaced, never recovered. Each\n" +
			"issue and revocation appears in netmgr events with the admin who made it.",
		Subcommands: []*cli.Command{tokenCreateCommand(), tokenListCommand(), tokenRevokeCommand()},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unknown token command %q (create, list or revoke)", cCtx.Args().First())
			}
			_ = cli.ShowSubcommandHelp(cCtx)
			return usagef("no token command given (create, list or revoke)")
		},
		OnUsageError: onUsageError,
	}
}

func tokenCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "issue a token for a user and print it",
		UsageText: "netmgr token create --user USER [--ttl DURATION] [--quiet] [options]",
		Description: "Issues a token that acts as USER and prints it with how to use it:\n\n" +
			"   $ netmgr token create --user alice --ttl 90d\n" +
			"   token 3f9a12bc for alice, expires 2027-03-23T10:00Z\n\n" +
			"     nmt_3f9a12bc_...\n\n" +
			"The token is shown only this once. Give it to alice, who either sets\n" +
			"NETMGR_TOKEN to it in the environment of netmgr commands or saves it, readable\n" +
			"only by her, in ~/.config/netmgr/token:\n\n" +
			"   mkdir -p ~/.config/netmgr && (umask 077 && echo 'nmt_...' > ~/.config/netmgr/token)\n\n" +
			"She also needs NETMGR_ADDR (a server) and NETMGR_CACERT (a copy of the\n" +
			"cluster's ca.pem), as every client outside the pool does.\n\n" +
			"--ttl is how long the token lasts: a duration such as 12h or 90m, or whole\n" +
			"days such as 30d or 1d12h (default 30d, at most 365d). --quiet prints the\n" +
			"token alone, for a script:\n\n" +
			"   export NETMGR_TOKEN=$(netmgr token create --user ci --ttl 7d --quiet)\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "user", Usage: "the `USER` the token acts as (required)"},
			&cli.StringFlag{Name: "ttl", Value: "30d", Usage: "how long the token lasts: a `DURATION` such as 12h, or days such as 30d (at most 365d)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the token"},
		}, clientFlags()...),
		Action:       runTokenCreate,
		OnUsageError: onUsageError,
	}
}

func tokenListCommand() *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the tokens issued, without the tokens themselves",
		UsageText: "netmgr token list [--json] [options]",
		Description: "Lists every token the servers hold, oldest first:\n\n" +
			"   ID        USER   ISSUED             EXPIRES                      BY\n" +
			"   3f9a12bc  alice  2026-11-24T10:00Z  2026-12-24T10:00Z            root\n" +
			"   0c4e7a21  ci     2026-10-01T08:30Z  2026-10-08T08:30Z (expired)  tclark\n\n" +
			"Times are UTC. An expired token is refused but stays listed until it is\n" +
			"revoked. --json prints the list as a JSON array.\n\n" + retryNote,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array"},
		}, clientFlags()...),
		Action:       runTokenList,
		OnUsageError: onUsageError,
	}
}

func tokenRevokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "revoke a token so that no request may use it",
		UsageText: "netmgr token revoke [options] ID",
		Description: "Revokes the token with ID (as netmgr token list shows it); every server\n" +
			"refuses it from then on. For example:\n\n" +
			"   $ netmgr token revoke 3f9a12bc\n" +
			"   token 3f9a12bc revoked\n\n" + retryNote,
		Flags:        clientFlags(),
		Action:       runTokenRevoke,
		OnUsageError: onUsageError,
	}
}

// parseTTL reads --ttl: a Go duration (12h, 90m), whole days (30d), or
// days then a duration (1d12h). It must be positive and at most
// client.MaxTokenTTL.
func parseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := usagef("--ttl: %q is neither a duration (12h, 90m) nor days (30d, 1d12h)", s)
	var days, d time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 { // no Go duration unit has a d
		n, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, bad
		}
		days, rest = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	if rest != "" || days == 0 && rest == s {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || (d < 0 && days > 0) {
			return 0, bad
		}
	}
	switch ttl := days + d; {
	case ttl <= 0:
		return 0, usagef("--ttl: %s is not a positive lifetime", s)
	case ttl > client.MaxTokenTTL:
		return 0, usagef("--ttl: %s is longer than a token may last, %dd", s, client.MaxTokenTTL/(24*time.Hour))
	case ttl < time.Millisecond:
		return 0, usagef("--ttl: %s is shorter than a millisecond", s)
	default:
		return ttl, nil
	}
}

func runTokenCreate(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q (the user goes in --user)", cCtx.Args().First())
	}
	user := cCtx.String("user")
	if user == "" {
		return usagef("--user is required: the user the token acts as")
	}
	ttl, err := parseTTL(cCtx.String("ttl"))
	if err != nil {
		return err
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	tok, err := c.CreateToken(cCtx.Context, client.TokenRequest{User: user, TTLMS: ttl.Milliseconds()})
	if err != nil {
		return fmt.Errorf("create token for %s: %w", user, err)
	}
	w := cCtx.App.Writer
	if cCtx.Bool("quiet") {
		_, err = fmt.Fprintln(w, tok.Token)
		return err
	}
	_, err = fmt.Fprintf(w, "token %s for %s, expires %s\n\n"+
		"  %s\n\n"+
		"This is the only time it is shown. To use it, %s sets it in the environment:\n\n"+
		"  export %s=%s\n\n"+
		"or saves it where netmgr looks for it, readable only by them:\n\n"+
		"  mkdir -p ~/.config/netmgr && (umask 077 && echo '%s' > ~/%s)\n\n"+
		"and points $%s at a server and $%s at a copy of the cluster's ca.pem\n"+
		"(default %s/%s).\n",
		tok.ID, tok.User, tok.ExpiresAt.UTC().Format(tokenTimeLayout), tok.Token, tok.User, envToken, tok.Token,
		tok.Token, tokenFile, envAddr, envCACert, defaultTLSDir, pki.CAFile)
	return err
}

func runTokenList(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q (token list takes only options)", cCtx.Args().First())
	}
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	tokens, err := c.Tokens(cCtx.Context)
	if err != nil {
		return fmt.Errorf("list tokens: %w", err)
	}
	if cCtx.Bool("json") {
		if tokens == nil {
			tokens = []client.Token{}
		}
		enc := json.NewEncoder(cCtx.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(tokens)
	}
	tw := newTable(cCtx.App.Writer)
	fmt.Fprintln(tw, "ID\tUSER\tISSUED\tEXPIRES\tBY")
	for _, t := range tokens {
		expires := t.ExpiresAt.UTC().Format(tokenTimeLayout)
		if t.Expired {
			expires += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(t.ID), printable(t.User), t.IssuedAt.UTC().Format(tokenTimeLayout), expires, printable(t.IssuedBy))
	}
	return tw.Flush()
}

func runTokenRevoke(cCtx *cli.Context) error {
	args := cCtx.Args().Slice()
	switch {
	case len(args) == 0:
		return usagef("missing token ID (netmgr token list shows them)")
	case len(args) > 1:
		return usagef("one token ID at a time, got %q after it", args[1:])
	}
	id := args[0]
	c, err := newClient(cCtx)
	if err != nil {
		return err
	}
	if err := c.RevokeToken(cCtx.Context, id); err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	_, err = fmt.Fprintf(cCtx.App.Writer, "token %s revoked\n", id)
	return err
}
