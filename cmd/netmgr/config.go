package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
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
// settable from a TOML file: it adds --config, and reads the file before
// the command's action. It panics on a flag of a type a file cannot set,
// which the tests catch.
//
// The file is applied here rather than by urfave/cli's altsrc: altsrc
// brings gopkg.in/yaml.v3 into the binary, and the two packages'
// initialisation was a tenth of the instructions of every command users
// type, `netexec --help` included, since they are all this binary.
func withConfigFile(cmd *cli.Command, role string) *cli.Command {
	flags := slices.Clone(cmd.Flags)
	for _, f := range flags {
		if !configurable(f) {
			panic(fmt.Sprintf("flag --%s (%T) cannot be read from a configuration file", f.Names()[0], f))
		}
	}
	cmd.Flags = append(flags, &cli.StringFlag{
		Name:      "config",
		Usage:     "TOML `FILE` setting any of these options by name (default " + defaultConfigFile(role) + " if it exists)",
		TakesFile: true,
	})
	cmd.Before = loadConfigFile(flags, role)
	return cmd
}

// configurable reports whether a configuration file can set f: whether
// configValues knows its type.
func configurable(f cli.Flag) bool {
	switch f.(type) {
	case *cli.StringFlag, *cli.PathFlag, *cli.StringSliceFlag, *cli.BoolFlag,
		*cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag,
		*cli.DurationFlag, *cli.Float64Flag:
		return true
	}
	return false
}

// loadConfigFile returns the Before function of a command made by
// withConfigFile: it reads --config (or the role's default file if it
// exists), refuses keys that name no flag, and sets every flag not given
// on the command line (or its environment variable) from the file.
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
		keys, err := readConfigKeys(path, flags)
		if err != nil {
			return err
		}
		for _, f := range flags {
			name, v, ok := configKey(keys, f)
			if !ok || cCtx.IsSet(name) {
				continue
			}
			values, err := configValues(f, v)
			if err != nil {
				return usagef("configuration %s: %s: %v", path, name, err)
			}
			for _, s := range values {
				if err := cCtx.Set(name, s); err != nil {
					return usagef("configuration %s: %s: %v", path, name, err)
				}
			}
		}
		return nil
	}
}

// configKey returns the file's key for flag f, one of its names, and
// its value, if the file has one.
func configKey(keys map[string]any, f cli.Flag) (string, any, bool) {
	for _, n := range f.Names() {
		if v, ok := keys[n]; ok {
			return n, v, true
		}
	}
	return "", nil, false
}

// configValues turns the file's value v for flag f into the strings the
// flag parses, as if given on the command line: one for most flags, one
// per element for a list.
func configValues(f cli.Flag, v any) ([]string, error) {
	switch f.(type) {
	case *cli.StringFlag, *cli.PathFlag:
		if s, ok := v.(string); ok {
			return []string{s}, nil
		}
		return nil, fmt.Errorf("want a string, not %v", v)
	case *cli.DurationFlag:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a duration string such as \"90s\", not %v", v)
		}
		if _, err := time.ParseDuration(s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	case *cli.StringSliceFlag:
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want a list of strings, not %v", v)
		}
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("want a list of strings, not %v", v)
			}
			out = append(out, s)
		}
		return out, nil
	case *cli.BoolFlag:
		if b, ok := v.(bool); ok {
			return []string{strconv.FormatBool(b)}, nil
		}
		return nil, fmt.Errorf("want true or false, not %v", v)
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		if n, ok := v.(int64); ok {
			return []string{strconv.FormatInt(n, 10)}, nil
		}
		return nil, fmt.Errorf("want an integer, not %v", v)
	case *cli.Float64Flag:
		switch n := v.(type) {
		case float64:
			return []string{strconv.FormatFloat(n, 'g', -1, 64)}, nil
		case int64:
			return []string{strconv.FormatInt(n, 10)}, nil
		}
		return nil, fmt.Errorf("want a number, not %v", v)
	}
	return nil, fmt.Errorf("a flag of type %T cannot be set from a file", f)
}

// readConfigKeys parses the TOML file at path and refuses a key that is
// no flag's name, so that a misspelt key is not silently ignored.
func readConfigKeys(path string, flags []cli.Flag) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	var keys map[string]any
	if err := toml.Unmarshal(data, &keys); err != nil {
		return nil, usagef("configuration %s: %v", path, err)
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
		return nil, usagef("configuration %s: unknown key %s (the keys are the option names, e.g. data-dir)",
			path, strings.Join(unknown, ", "))
	}
	return keys, nil
}
