package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/spec"
)

// The words of netexec --export.
const (
	exportAll  = "ALL"
	exportNone = "NONE"
)

// defaultExport names what netexec passes of the submitter's environment
// when --export is not given: the locale and time zone, which say how the
// user reads text and times and mean the same on every machine. The rest
// does not travel well: PATH, HOME and the like describe the submitting
// machine (a job runs on other machines, possibly of another
// architecture, and gets HOME, USER, LOGNAME, SHELL of its account and
// the machine's PATH there), session variables (DISPLAY, SSH_AUTH_SOCK,
// TERM) point at things the job cannot reach, and every variable is
// stored with the job in the servers' replicated log. Slurm exports ALL
// by default because its nodes are one cluster's twins; a netmgr pool is
// a set of unlike workstations.
var defaultExport = []string{"LANG", "LANGUAGE", "LC_*", "TZ"}

// neverExported are the variables --export ALL leaves behind: netmgr's own
// (NETMGR_ADDR, NETMGR_TOKEN: a credential has no place in a job's
// environment or the log) and the shell's bookkeeping of this session.
func neverExported(name string) bool {
	switch name {
	case "PWD", "OLDPWD", "SHLVL", "_":
		return true
	}
	return strings.HasPrefix(name, "NETMGR_")
}

// exportEnv adds to js.Env the variables of environ (the submitter's
// environment, NAME=value entries) that export selects: "" is the
// default set (defaultExport), NONE nothing, ALL everything but
// neverExported, else a comma-separated list of NAMEs (a NAME the
// submitter has not set is left out) and NAME=value entries, with ALL
// allowed among them. An entry js.Env already sets (--env, env=) wins.
func exportEnv(js *client.JobSpec, export string, environ []string) error {
	var out []string
	add := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		for _, e := range js.Env {
			if strings.HasPrefix(e, name+"=") {
				return
			}
		}
		for i, e := range out {
			if strings.HasPrefix(e, name+"=") {
				out[i] = kv
				return
			}
		}
		out = append(out, kv)
	}
	lookup := func(pattern string) {
		for _, kv := range environ {
			name, _, _ := strings.Cut(kv, "=")
			if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasPrefix(name, prefix) || name == pattern {
				if spec.CheckEnv(kv) == nil {
					add(kv)
				}
			}
		}
	}
	switch items := splitList([]string{export}); {
	case export == "":
		for _, p := range defaultExport {
			lookup(p)
		}
	case len(items) == 1 && items[0] == exportNone:
	default:
		for _, it := range items {
			switch {
			case it == exportAll:
				for _, kv := range environ {
					if name, _, _ := strings.Cut(kv, "="); !neverExported(name) && spec.CheckEnv(kv) == nil {
						add(kv)
					}
				}
			case it == exportNone:
				return usagef("--export: NONE stands alone, got %q", export)
			case strings.Contains(it, "="):
				if err := spec.CheckEnv(it); err != nil {
					return usagef("--export: %w", err)
				}
				add(it)
			default:
				if err := spec.CheckEnv(it + "=x"); err != nil || strings.Contains(it, "*") {
					return usagef("--export: %q is not a variable name, NAME=value, ALL or NONE", it)
				}
				lookup(it)
			}
		}
	}
	js.Env = append(out, js.Env...)
	return nil
}

// resolvePaths makes the relative paths of js absolute against cwd, the
// submitter's directory, as they would be read there: each binary whose
// path has a slash but is relative (./myjob.sh, bin/run), which must
// exist (exists says so) or the submit is refused; each argument that
// starts with ./ or ../; and dir (--chdir), which must be an existing
// directory when relative. The job then needs the same paths on its
// machines: a file system shared with the submitting machine. Bare names
// (sh, myjob) are looked up in the PATH on the machine that runs them.
func resolvePaths(js *client.JobSpec, dir, cwd string, exists func(path string, wantDir bool) bool) error {
	abs := func(p string) string { return filepath.Join(cwd, p) }
	for _, key := range slices.Sorted(maps.Keys(js.Binaries)) {
		p := js.Binaries[key]
		if !strings.Contains(p, "/") || filepath.IsAbs(p) {
			continue
		}
		if !exists(abs(p), false) {
			return usagef("%s: no such file in %s; a relative BINARY is resolved at submit against the current directory "+
				"(its machines must see the same path, e.g. on a shared file system); give an absolute path or a name in the machines' PATH", p, cwd)
		}
		js.Binaries[key] = abs(p)
	}
	for i, a := range js.Args {
		if strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
			js.Args[i] = abs(a)
		}
	}
	switch {
	case dir == "":
	case filepath.IsAbs(dir):
		js.Dir = filepath.Clean(dir)
	case !exists(abs(dir), true):
		return usagef("--chdir %s: no such directory in %s; a relative directory is resolved at submit against the current directory "+
			"(its machines must see the same path, e.g. on a shared file system)", dir, cwd)
	default:
		js.Dir = abs(dir)
	}
	return nil
}

// pathExists reports whether path exists here, and is a directory when
// wantDir is set.
func pathExists(path string, wantDir bool) bool {
	fi, err := os.Stat(path)
	return err == nil && (!wantDir || fi.IsDir())
}

// refusedNote marks the help of an option the servers refuse as not
// supported yet; it goes once they honour it.
const refusedNote = "REFUSED by the server: not supported yet"
