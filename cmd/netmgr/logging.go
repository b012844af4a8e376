package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

// logLevelFlag is the --log-level flag of the long-running commands
// (server, stub, agent, sim).
func logLevelFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-level", Value: "info", Usage: "log `LEVEL`: debug, info, warn or error (logs go to stderr)"}
}

// logFormatFlag is their --log-format flag.
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Value: "text", Usage: "log `FORMAT`: text (key=value) or json (one object per line)"}
}

// newLogger returns the one logger of a long-running command, writing to
// w at the level named by --log-level in the format named by --log-format.
// Raft's and memberlist's lines reach it too (package slogadapt).
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
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(cCtx.String("log-format")) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format must be text or json, got %q", cCtx.String("log-format"))
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
