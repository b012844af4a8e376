package spec

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// Option names understood today.
const (
	optBinaries = "binaries"
	optMin      = "min"
	optName     = "symb_name"
	optEnv      = "env"
	optArgs     = "args"
)

// later lists the paper's options whose machinery does not exist yet; they
// get a clearer error than a misspelt option.
var later = map[string]bool{
	"keys": true, "mem": true, "rating": true, "mounts": true, "machines": true,
	"unique": true, "max_per_machine": true, "load": true, "queue": true,
	"restart": true, "max_restarts": true, "mail": true, "cron": true,
	"after": true, "copy_in": true, "copy_out": true,
}

// maxNameLen bounds symb_name; names are shown in tables and used on the
// command line.
const maxNameLen = 64

// Validate checks a spec built by other means than Parse (for example from
// netexec's flags) against the rules Parse enforces. The error names the
// option but no position.
func Validate(s client.JobSpec) error {
	if len(s.Binaries) == 0 {
		return fmt.Errorf("option %s is required", optBinaries)
	}
	keys := make([]string, 0, len(s.Binaries))
	for k := range s.Binaries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := checkKey(k); msg != "" {
			return fmt.Errorf("option %s: %s", optBinaries, msg)
		}
		if msg := checkPath(s.Binaries[k]); msg != "" {
			return fmt.Errorf("option %s: key %s: %s", optBinaries, k, msg)
		}
	}
	if s.Min < 0 {
		return fmt.Errorf("option %s: %s", optMin, notPositive(strconv.Itoa(s.Min)))
	}
	if s.Name != "" {
		if msg := checkName(s.Name); msg != "" {
			return fmt.Errorf("option %s: %s", optName, msg)
		}
	}
	for _, e := range s.Env {
		if msg := checkEnv(e); msg != "" {
			return fmt.Errorf("option %s: %s", optEnv, msg)
		}
	}
	for _, a := range s.Args {
		if msg := checkText(a); msg != "" {
			return fmt.Errorf("option %s: %s", optArgs, msg)
		}
	}
	return nil
}

// CheckName reports whether name is acceptable as a symb_name, for callers
// that take a name outside a spec string (netexec --name).
func CheckName(name string) error {
	if msg := checkName(name); msg != "" {
		return fmt.Errorf("option %s: %s", optName, msg)
	}
	return nil
}

// CheckEnv reports whether entry is acceptable as an env entry (NAME=value).
func CheckEnv(entry string) error {
	if msg := checkEnv(entry); msg != "" {
		return fmt.Errorf("option %s: %s", optEnv, msg)
	}
	return nil
}

// The check functions return "" when the value is fine and otherwise the
// message, without position or option, so Parse and Validate can frame it.

func notPositive(v string) string {
	return fmt.Sprintf("%q is not a positive integer", v)
}

func parseMin(v string) (int, string) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || strings.HasPrefix(v, "+") {
		return 0, notPositive(v)
	}
	return n, ""
}

func checkText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Sprintf("%q contains a NUL byte", s)
	}
	return ""
}

func checkName(s string) string {
	if s == "" {
		return "the name is empty"
	}
	if len(s) > maxNameLen {
		return fmt.Sprintf("%q is longer than %d characters", s, maxNameLen)
	}
	allDigits := true
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			allDigits = false
		case (r == '-' || r == '.') && i > 0:
			allDigits = false
		default:
			return fmt.Sprintf("%q is not a valid name (letters, digits and _-. only, not starting with - or .)", s)
		}
	}
	if allDigits {
		return fmt.Sprintf("%q is all digits and would read as a job id", s)
	}
	return ""
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func checkEnv(s string) string {
	name, _, ok := strings.Cut(s, "=")
	if !ok || !isEnvName(name) {
		return fmt.Sprintf("%q is not of the form NAME=value", s)
	}
	return checkText(s)
}

func checkKey(s string) string {
	if s == client.AnyKey {
		return ""
	}
	if s == "" {
		return "empty machine key"
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return fmt.Sprintf("%q is not a machine key (letters, digits and _-., or \"*\")", s)
		}
	}
	return ""
}

func checkPath(s string) string {
	if s == "" {
		return "empty binary path"
	}
	return checkText(s)
}
