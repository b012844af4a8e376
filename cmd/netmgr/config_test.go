package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

// configRoles are the commands that read a configuration file.
var configRoles = map[string]func() *cli.Command{"server": serverCommand, "stub": stubCommand}

// configKeyValue returns, for flag f, a TOML line setting it to a value
// unlike its default and that value as cCtx.Value renders it.
func configKeyValue(t *testing.T, f cli.Flag) (line, want string) {
	t.Helper()
	name := f.Names()[0]
	switch f.(type) {
	case *altsrc.StringFlag:
		return fmt.Sprintf("%s = %q", name, "v-"+name), "v-" + name
	case *altsrc.StringSliceFlag:
		return fmt.Sprintf("%s = [%q, %q]", name, "a-"+name, "b-"+name), fmt.Sprint([]string{"a-" + name, "b-" + name})
	case *altsrc.BoolFlag:
		return name + " = true", "true"
	case *altsrc.IntFlag:
		return name + " = 7", "7"
	case *altsrc.DurationFlag:
		return name + ` = "7m3s"`, (7*time.Minute + 3*time.Second).String()
	case *altsrc.Float64Flag:
		return name + " = 7.5", "7.5"
	}
	t.Fatalf("flag --%s (%T) has no configuration key", name, f)
	return "", ""
}

// runWithConfig runs `netmgr ROLE args...` with the role's flags and
// configuration file handling but an action that records every flag's
// value instead of starting anything, and returns the values by name.
func runWithConfig(t *testing.T, role string, args ...string) (map[string]string, error) {
	t.Helper()
	cmd := configRoles[role]()
	got := map[string]string{}
	cmd.Action = func(cCtx *cli.Context) error {
		for _, f := range cmd.Flags {
			n := f.Names()[0]
			if _, ok := f.(*altsrc.StringSliceFlag); ok {
				got[n] = fmt.Sprint(cCtx.StringSlice(n))
				continue
			}
			got[n] = fmt.Sprint(cCtx.Value(n))
		}
		return nil
	}
	app := &cli.App{Name: "netmgr", Commands: []*cli.Command{cmd}}
	setCommon(app)
	app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
	return got, app.Run(append([]string{"netmgr", role}, args...))
}

// TestConfigEveryFlagHasKey writes a file setting every option of
// server and stub (enumerated from the command definitions) to a value
// that is not its default, and checks each reaches the command.
func TestConfigEveryFlagHasKey(t *testing.T) {
	for role, mk := range configRoles {
		t.Run(role, func(t *testing.T) {
			var lines []string
			want := map[string]string{}
			for _, f := range mk().Flags {
				name := f.Names()[0]
				if name == "config" {
					continue
				}
				if _, ok := f.(altsrc.FlagInputSourceExtension); !ok {
					t.Errorf("flag --%s (%T) cannot be set from the configuration file", name, f)
					continue
				}
				line, w := configKeyValue(t, f)
				lines = append(lines, line)
				want[name] = w
			}
			path := filepath.Join(t.TempDir(), role+".toml")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := runWithConfig(t, role, "--config", path)
			if err != nil {
				t.Fatalf("run with %s: %v", path, err)
			}
			for name, w := range want {
				if got[name] != w {
					t.Errorf("--%s from the file: got %q, want %q", name, got[name], w)
				}
			}
		})
	}
}

// TestConfigCommandLineWins checks that an option given on the command
// line overrides the file's key, and that the file fills in the rest.
func TestConfigCommandLineWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.toml")
	file := "http = \"10.0.0.1:1\"\njoin = [\"a:1\", \"b:2\"]\nbootstrap-expect = 3\ninsecure = true\n"
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := runWithConfig(t, "server", "--config", path, "--http", "10.0.0.2:2", "--join", "c:3", "--bootstrap-expect=5")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"http": "10.0.0.2:2", "join": "[c:3]", "bootstrap-expect": "5", // the command line's
		"insecure": "true", "raft": "127.0.0.1:17647", // the file's; the default
	} {
		if got[name] != want {
			t.Errorf("--%s: got %q, want %q", name, got[name], want)
		}
	}
}

// TestConfigRefused checks the files a server or stub refuses to start
// with, and the message naming the problem.
func TestConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name, role, file, want string
	}{
		{"unknown key", "stub", "data-dir = \"/x\"\nexecdir = \"/y\"\nbogus = 1\n", "unknown key bogus, execdir"},
		{"config key", "server", "config = \"/etc/other.toml\"\n", "unknown key config"},
		{"wrong type", "server", "bootstrap-expect = \"three\"\n", "bootstrap-expect"},
		{"bad duration", "stub", "vacate-after = \"soon\"\n", "vacate-after"},
		{"not TOML", "stub", "data-dir: /x\n", "configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.toml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := runWithConfig(t, tc.role, "--config", path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("got error %v, want one naming %s and containing %q", err, path, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "absent.toml")
		if _, err := runWithConfig(t, "server", "--config", path); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("got error %v, want one naming %s", err, path)
		}
	})
}

// TestConfigFlagList checks that --config is the one flag the file
// cannot set, so the enumeration above covers every other flag.
func TestConfigFlagList(t *testing.T) {
	for role, mk := range configRoles {
		var plain []string
		for _, f := range mk().Flags {
			if _, ok := f.(altsrc.FlagInputSourceExtension); !ok {
				plain = append(plain, f.Names()[0])
			}
		}
		if !slices.Equal(plain, []string{"config"}) {
			t.Errorf("%s: flags without a key: %v, want only [config]", role, plain)
		}
	}
}

// TestConfigSamples checks the sample configurations the package installs
// (packaging/etc): every option of the command appears as a key, and with
// every key uncommented the file is one the command accepts.
func TestConfigSamples(t *testing.T) {
	key := regexp.MustCompile(`^# ([a-z][a-z-]*) = `)
	for role, mk := range configRoles {
		t.Run(role, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "packaging", "etc", role+".toml"))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			var out []string
			for line := range strings.Lines(string(data)) {
				if m := key.FindStringSubmatch(line); m != nil {
					if seen[m[1]] {
						t.Errorf("key %s appears twice", m[1])
					}
					seen[m[1]] = true
					line = strings.TrimPrefix(line, "# ")
				}
				out = append(out, line)
			}
			for _, f := range mk().Flags {
				if n := f.Names()[0]; n != "config" && !seen[n] {
					t.Errorf("the sample has no key %s", n)
				}
			}
			path := filepath.Join(t.TempDir(), role+".toml")
			if err := os.WriteFile(path, []byte(strings.Join(out, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := runWithConfig(t, role, "--config", path); err != nil {
				t.Errorf("the sample with every key uncommented: %v", err)
			}
		})
	}
}
