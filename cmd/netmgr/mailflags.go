package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/server/mailer"
)

// mailFlags are the server's flags for sending the group's mail.
func mailFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "smtp", Usage: "send mail through the SMTP relay at `HOST:PORT`"},
		&cli.StringFlag{Name: "smtp-user", Usage: "authenticate to the relay as `USER` (needs --smtp-password-file)"},
		&cli.StringFlag{Name: "smtp-password-file", Usage: "`FILE` holding the relay password (its first line)"},
		&cli.StringFlag{Name: "smtp-starttls", Value: mailer.StartTLSOpportunistic, Usage: "STARTTLS `POLICY` for the relay: mandatory, opportunistic or none"},
		&cli.StringFlag{Name: "sendmail", Usage: "send mail with the sendmail-compatible `PROGRAM` instead of a relay"},
		&cli.StringFlag{Name: "mail-from", Usage: "sender `ADDRESS` of the group's mail (required with --smtp or --sendmail)"},
		&cli.StringFlag{Name: "mail-domain", Usage: "`DOMAIN` completing mail to a login (alice mails alice@DOMAIN); default --mail-from's"},
	}
}

// mailConfig reads the mail flags: nil when the server sends no mail.
func mailConfig(cCtx *cli.Context) (*mailer.Config, error) {
	relay, sendmail := cCtx.String("smtp"), cCtx.String("sendmail")
	if relay == "" && sendmail == "" {
		for _, f := range []string{"smtp-user", "smtp-password-file", "mail-from", "mail-domain"} {
			if cCtx.IsSet(f) {
				return nil, usagef("--%s needs --smtp or --sendmail", f)
			}
		}
		return nil, nil
	}
	switch {
	case relay != "" && sendmail != "":
		return nil, usagef("--smtp and --sendmail exclude each other: the group's mail leaves one way")
	case cCtx.String("mail-from") == "":
		return nil, usagef("--mail-from ADDRESS is required with --smtp or --sendmail")
	case (cCtx.String("smtp-user") == "") != (cCtx.String("smtp-password-file") == ""):
		return nil, usagef("--smtp-user and --smtp-password-file go together")
	case sendmail != "" && (cCtx.IsSet("smtp-user") || cCtx.IsSet("smtp-starttls")):
		return nil, usagef("--smtp-user and --smtp-starttls are for --smtp, not --sendmail")
	}
	cfg := &mailer.Config{
		SMTP: relay, Sendmail: sendmail, User: cCtx.String("smtp-user"), StartTLS: cCtx.String("smtp-starttls"),
		From: cCtx.String("mail-from"), Domain: cCtx.String("mail-domain"),
	}
	if f := cCtx.String("smtp-password-file"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read --smtp-password-file: %w", err)
		}
		cfg.Password, _, _ = strings.Cut(string(data), "\n")
		cfg.Password = strings.TrimSuffix(cfg.Password, "\r")
	}
	if _, err := mailer.New(*cfg); err != nil {
		return nil, usagef("%v", err)
	}
	return cfg, nil
}
