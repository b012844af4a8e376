package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

// logLevelFlag is the --log-level flag of the long-running commands.
func logLevelFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-level", Value: "info", Usage: "log `LEVEL`: debug, info, warn or error (logs go to stderr)"}
}

// newLogger returns a text logger writing to w at the level named by
// --log-level.
func newLogger(cCtx *cli.Context, w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	switch strings.ToLower(cCtx.String("log-level")) {
	case "debug":
		lvl = slog.LevelDebug
	case "info":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		return nil, usagef("--log-level must be debug, info, warn or error, got %q", cCtx.String("log-level"))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
}

// splitList flattens repeatable, comma-separated flag values such as
// --join a,b --join c into [a b c].
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// requireFlags returns a usage error naming the first of names not given.
func requireFlags(cCtx *cli.Context, names ...string) error {
	for _, n := range names {
		if cCtx.String(n) == "" {
			return usagef("--%s is required", n)
		}
	}
	return nil
}
