package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

// defaultConfigDir is where netmgr server and netmgr stub look for their
// configuration file (server.toml, stub.toml) when --config is not given.
const defaultConfigDir = "/etc/netmgr"

// configDescription is the paragraph of server's and stub's --help about
// the configuration file.
func configDescription(role string) string {
	return "Every option can also be set in a TOML file, --config FILE (default\n" +
		defaultConfigFile(role) + " if it exists; --config \"\" reads none). The keys are\n" +
		"the option names without the dashes in front, e.g.\n\n" +
		"   data-dir = \"/var/lib/netmgr/" + role + "\"\n" +
		"   join = [\"10.0.0.1:17648\", \"10.0.0.2:17648\"]\n\n" +
		"An option given on the command line wins over the file. A key that is no option\n" +
		"of netmgr " + role + " stops it from starting.\n\n"
}

// defaultConfigFile is the configuration file netmgr ROLE reads when
// --config is not given and the file exists.
func defaultConfigFile(role string) string {
	return filepath.Join(defaultConfigDir, role+".toml")
}

// withConfigFile makes every flag of cmd (netmgr server or netmgr stub)
// settable from a TOML file: it wraps each flag in its altsrc counterpart,
// adds --config, and reads the file before the command's action. It
// panics on a flag type altsrc has no counterpart for, which the tests
// catch.
func withConfigFile(cmd *cli.Command, role string) *cli.Command {
	flags := make([]cli.Flag, 0, len(cmd.Flags)+1)
	for _, f := range cmd.Flags {
		flags = append(flags, configurable(f))
	}
	cmd.Flags = append(flags, &cli.StringFlag{
		Name:      "config",
		Usage:     "TOML `FILE` setting any of these options by name (default " + defaultConfigFile(role) + " if it exists)",
		TakesFile: true,
	})
	cmd.Before = loadConfigFile(flags, role)
	return cmd
}

// configurable returns f wrapped so that altsrc can set it from a file.
func configurable(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *cli.StringFlag:
		return altsrc.NewStringFlag(f)
	case *cli.StringSliceFlag:
		return altsrc.NewStringSliceFlag(f)
	case *cli.BoolFlag:
		return altsrc.NewBoolFlag(f)
	case *cli.IntFlag:
		return altsrc.NewIntFlag(f)
	case *cli.DurationFlag:
		return altsrc.NewDurationFlag(f)
	case *cli.Float64Flag:
		return altsrc.NewFloat64Flag(f)
	case *cli.PathFlag:
		return altsrc.NewPathFlag(f)
	case *cli.UintFlag:
		return altsrc.NewUintFlag(f)
	case *cli.Int64Flag:
		return altsrc.NewInt64Flag(f)
	case *cli.Uint64Flag:
		return altsrc.NewUint64Flag(f)
	}
	panic(fmt.Sprintf("flag --%s (%T) cannot be read from a configuration file", f.Names()[0], f))
}

// loadConfigFile returns the Before function of a command made by
// withConfigFile: it reads --config (or the role's default file if it
// exists), refuses keys that name no flag, and sets every flag not given
// on the command line from the file.
func loadConfigFile(flags []cli.Flag, role string) cli.BeforeFunc {
	return func(cCtx *cli.Context) error {
		path := cCtx.String("config")
		if !cCtx.IsSet("config") {
			path = defaultConfigFile(role)
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return nil
			}
		}
		if path == "" {
			return nil
		}
		if err := checkConfigKeys(path, flags); err != nil {
			return err
		}
		src, err := altsrc.NewTomlSourceFromFile(path)
		if err != nil {
			return fmt.Errorf("read configuration %s: %w", path, err)
		}
		if err := altsrc.ApplyInputSourceValues(cCtx, src, flags); err != nil {
			return usagef("configuration %s: %v", path, err)
		}
		return nil
	}
}

// checkConfigKeys parses the TOML file at path and refuses a key that is
// no flag's name, so that a misspelt key is not silently ignored.
func checkConfigKeys(path string, flags []cli.Flag) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read configuration: %w", err)
	}
	var keys map[string]any
	if err := toml.Unmarshal(data, &keys); err != nil {
		return usagef("configuration %s: %v", path, err)
	}
	var known []string
	for _, f := range flags {
		known = append(known, f.Names()...)
	}
	var unknown []string
	for k := range keys {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return usagef("configuration %s: unknown key %s (the keys are the option names, e.g. data-dir)",
			path, strings.Join(unknown, ", "))
	}
	return nil
}
