package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moduleRoot is the module's root directory, from this package's.
const moduleRoot = "../.."

// Where the rules are written, for the failure messages.
const (
	uphill = `DESIGN.md, "No import goes uphill" under *The parts*`
	issue  = "issue 35 point 2, written in internal/archtest/imports_test.go (importRules)"
	table  = `DESIGN.md's package table ("imports of ours")`
)

// nothing is an only list that allows no package of ours.
var nothing = []string{}

// A rule binds the packages who names, but for except, to import only
// the packages of ours only names (when only is not nil; empty: none) and
// none that never names. A pattern is a package path relative to the
// module ("server/planner"), "P/..." for P and every package below it, or
// "..." for every package. A rule with tests set also binds the imports of
// the packages' tests (.TestImports and .XTestImports); the others bind
// .Imports only, what the packages' code needs.
type rule struct {
	who    []string
	except []string
	only   []string
	never  []string
	tests  bool
	where  string
}

// importRules are the rules, in one table. A package two rules bind keeps
// both.
var importRules = []rule{
	{who: []string{"queue", "matcher"}, only: nothing, where: uphill + "; STYLE.md, Dependency direction"},
	{who: []string{"client/pki", "client/dblang", "internal/boltcheck", "internal/buildinfo", "internal/slogadapt",
		"server/history", "server/mailer", "server/mailer/smtptest", "server/policy"}, only: nothing, where: uphill},
	{who: []string{"client"}, only: []string{"client/pki", "client/files"}, where: uphill},
	{who: []string{"client/..."}, only: []string{"client/...", "internal/..."}, where: issue + " (the client wing imports itself and the internal leaves)"},
	{who: []string{"fsm"}, only: []string{"queue"}, where: uphill + "; STYLE.md, Dependency direction"},
	{who: []string{"fsm/..."}, except: []string{"fsm"}, only: []string{"fsm/...", "queue"}, where: issue + " (fsm's own packages may import fsm)"},
	{who: []string{"server/planner"}, only: []string{"fsm", "matcher", "queue", "server/policy"}, where: uphill},
	{who: []string{"server/..."}, except: []string{"server/servertest"}, never: []string{"stub/...", "cmd/..."}, where: uphill + "; STYLE.md, Dependency direction"},
	{who: []string{"stub/..."}, never: []string{"server/...", "fsm/...", "matcher", "queue", "cmd/..."}, where: uphill + "; STYLE.md, Dependency direction"},
	{who: []string{"internal/..."}, except: []string{"internal/sockettest", "internal/gossip"}, only: nothing, where: table + "; " + issue},
	{who: []string{"internal/sockettest"}, only: []string{"client"}, where: table},
	{who: []string{"internal/gossip"}, only: []string{"client/pki", "internal/slogadapt", "internal/warnlimit"}, where: table + " (the node servers and stubs share)"},
	{who: []string{"..."}, never: []string{"cmd/..."}, where: issue + " (nothing imports a command)"},
	{who: []string{"..."}, except: []string{"stub", "cmd/netmgr"}, never: []string{"stub/supervisor"}, tests: true, where: uphill + " (only stub and cmd/netmgr import stub/supervisor)"},
	{who: []string{"..."}, except: []string{"cmd/netmgr-bench"}, never: []string{"server/servertest"}, where: uphill + " (only tests and cmd/netmgr-bench import server/servertest)"},
}

// pkg is one package of the module as go list gives it, paths relative
// to the module.
type pkg struct {
	path    string   // "server/planner"
	imports []string // the packages of ours its code imports (.Imports)
	tests   []string // the packages of ours its tests import, but itself
}

// listPackages runs `go list` in the module's root and returns every
// package of the module, by path; it skips t when there is no go tool.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list the packages with (%v): the import rules are not checked", err)
	}
	const format = `{{.Module.Path}}|{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`
	cmd := exec.Command(goTool, "list", "-deps=false", "-f", format, "./...")
	cmd.Dir = moduleRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := make(map[string]pkg)
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 {
			t.Fatalf("go list printed %q, want MODULE|PACKAGE|IMPORTS|TEST IMPORTS", line)
		}
		mod := f[0]
		ours := func(paths string, self string) []string {
			var list []string
			for _, p := range strings.Fields(paths) {
				if r, ok := relative(mod, p); ok && r != self && !slices.Contains(list, r) {
					list = append(list, r)
				}
			}
			slices.Sort(list)
			return list
		}
		path, ok := relative(mod, f[1])
		if !ok {
			t.Fatalf("go list printed package %s, outside module %s", f[1], mod)
		}
		pkgs[path] = pkg{path: path, imports: ours(f[2], path), tests: ours(f[3], path)}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list printed no package")
	}
	return pkgs
}

// relative returns p relative to module mod, and whether p is in it.
func relative(mod, p string) (string, bool) {
	if p == mod {
		return ".", true
	}
	r, ok := strings.CutPrefix(p, mod+"/")
	return r, ok
}

// match reports whether package p is one pattern names.
func match(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

func matchAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pattern string) bool { return match(pattern, p) })
}

// binds reports whether r binds package p.
func (r rule) binds(p string) bool { return matchAny(r.who, p) && !matchAny(r.except, p) }

// String names the packages r binds, as its failure messages do.
func (r rule) String() string {
	s := strings.Join(r.who, ", ")
	if len(r.except) > 0 {
		s += " (but " + strings.Join(r.except, ", ") + ")"
	}
	return s
}

// violations returns one line for every import of pkgs that breaks one of
// rules, in the order of the packages' paths.
func violations(pkgs map[string]pkg, rules []rule) []string {
	paths := slices.Sorted(maps.Keys(pkgs))
	var bad []string
	for _, p := range paths {
		for _, r := range rules {
			if !r.binds(p) {
				continue
			}
			check := func(imports []string, how string) {
				for _, imp := range imports {
					if r.only != nil && !matchAny(r.only, imp) {
						allowed := "nothing of ours"
						if len(r.only) > 0 {
							allowed = "only " + strings.Join(r.only, ", ")
						}
						bad = append(bad, fmt.Sprintf("%s %s %s, but %s may import %s (rule written in %s)", p, how, imp, r, allowed, r.where))
					}
					if matchAny(r.never, imp) {
						bad = append(bad, fmt.Sprintf("%s %s %s, but %s must never import %s (rule written in %s)", p, how, imp, r, strings.Join(r.never, ", "), r.where))
					}
				}
			}
			check(pkgs[p].imports, "imports")
			if r.tests {
				check(pkgs[p].tests, "imports in its tests")
			}
		}
	}
	return bad
}

// TestImportRules checks every package's imports of ours against
// importRules.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for _, v := range violations(pkgs, importRules) {
		t.Error(v)
	}
	// A rule whose pattern names no package (a typo, a package gone) would
	// bind nothing and pass forever.
	for _, r := range importRules {
		for _, pattern := range slices.Concat(r.who, r.except, r.only, r.never) {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(pkgs)), func(p string) bool { return match(pattern, p) }) {
				t.Errorf("the rule on %s (written in %s) names %q, which is no package of the module", r, r.where, pattern)
			}
		}
	}
}

// TestImportRulesCatch feeds the checker imports that break the rules and
// some that keep them, so a checker that passes everything fails here.
func TestImportRulesCatch(t *testing.T) {
	tests := []struct {
		name    string
		pkg     pkg
		wantBad bool
	}{
		{"matcher imports queue", pkg{path: "matcher", imports: []string{"queue"}}, true},
		{"queue imports nothing", pkg{path: "queue"}, false},
		{"fsm imports matcher", pkg{path: "fsm", imports: []string{"matcher", "queue"}}, true},
		{"fsm imports queue", pkg{path: "fsm", imports: []string{"queue"}}, false},
		{"fsm/fsmscale imports fsm", pkg{path: "fsm/fsmscale", imports: []string{"fsm"}}, false},
		{"fsm/fsmscale imports client", pkg{path: "fsm/fsmscale", imports: []string{"fsm", "client"}}, true},
		{"server imports stub/owner", pkg{path: "server", imports: []string{"client", "stub/owner"}}, true},
		{"server/servertest imports stub", pkg{path: "server/servertest", imports: []string{"server", "stub"}}, false},
		{"stub imports server/planner", pkg{path: "stub", imports: []string{"server/planner"}}, true},
		{"stub/owner imports queue", pkg{path: "stub/owner", imports: []string{"queue"}}, true},
		{"client/files imports internal/beneath", pkg{path: "client/files", imports: []string{"internal/beneath"}}, false},
		{"client/spec imports fsm", pkg{path: "client/spec", imports: []string{"client", "fsm"}}, true},
		{"internal/beneath imports client", pkg{path: "internal/beneath", imports: []string{"client"}}, true},
		{"server imports cmd/netmgr", pkg{path: "server", imports: []string{"cmd/netmgr"}}, true},
		{"server's tests import stub/supervisor", pkg{path: "server", tests: []string{"stub/supervisor"}}, true},
		{"stub's tests import stub/supervisor", pkg{path: "stub", tests: []string{"stub/supervisor"}}, false},
		{"cmd/netmgr-chaos imports server/servertest", pkg{path: "cmd/netmgr-chaos", imports: []string{"server/servertest"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(map[string]pkg{tt.pkg.path: tt.pkg}, importRules)
			if (len(got) > 0) != tt.wantBad {
				t.Errorf("violations = %q, want some: %v", got, tt.wantBad)
			}
		})
	}
}

// designRow is one row of DESIGN.md's package table.
type designRow struct {
	line    int
	imports []string
}

// readDesignTable reads the table under "Every package of the module" in
// DESIGN.md: package -> its row.
func readDesignTable(t *testing.T) (map[string]designRow, string) {
	t.Helper()
	name := filepath.Join(moduleRoot, "DESIGN.md")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("read the package table: %v", err)
	}
	rows := make(map[string]designRow)
	sc := bufio.NewScanner(bytes.NewReader(data))
	n, found, inTable := 0, false, false
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case !found:
			found = strings.HasPrefix(line, "Every package of the module")
			continue
		case !inTable && !strings.HasPrefix(line, "|"):
			continue
		case inTable && !strings.HasPrefix(line, "|"):
			return rows, "DESIGN.md"
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			t.Fatalf("%s:%d: a row of the package table with fewer than 3 cells", name, n)
		}
		p := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if p == "package" || strings.Trim(p, "-") == "" { // the header and its rule
			continue
		}
		if old, dup := rows[p]; dup {
			t.Errorf("%s:%d: package %s has a second row (the first at line %d)", name, n, p, old.line)
		}
		row := designRow{line: n, imports: []string{}}
		if imports := strings.TrimSpace(cells[2]); imports != "none" {
			for imp := range strings.SplitSeq(imports, ",") {
				row.imports = append(row.imports, strings.Trim(strings.TrimSpace(imp), "`"))
			}
		}
		slices.Sort(row.imports)
		rows[p] = row
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if !found {
		t.Fatalf(`%s: no line starts "Every package of the module": where is the package table?`, name)
	}
	return rows, "DESIGN.md"
}

// TestDesignTable checks DESIGN.md's package table against go list: a row
// for every package of the module, none for anything else, and each row's
// "imports of ours" what the package's code imports.
func TestDesignTable(t *testing.T) {
	pkgs := listPackages(t)
	rows, name := readDesignTable(t)
	paths := slices.Sorted(maps.Keys(pkgs))
	for _, p := range paths {
		row, ok := rows[p]
		if !ok {
			t.Errorf("%s: the package table has no row for %s (go list: imports of ours %s)", name, p, orNone(pkgs[p].imports))
			continue
		}
		if want := pkgs[p].imports; !slices.Equal(row.imports, want) {
			t.Errorf("%s:%d: %s's imports of ours are %s; go list says %s", name, row.line, p, orNone(row.imports), orNone(want))
		}
	}
	for p, row := range rows {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("%s:%d: the package table has a row for %s, which go list does not list", name, row.line, p)
		}
	}
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
