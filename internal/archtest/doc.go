// Package archtest holds tests of the module's shape, no code: which
// packages of ours each package may import (imports_test.go), checked
// against `go list`'s answer, and DESIGN.md's package table kept equal to
// that answer, so neither the imports nor the table can drift.
//
// The rules sit in one table, importRules, each naming where it is
// written (DESIGN.md's *No import goes uphill*, issue 35). A failure says
// which import broke which rule and where the rule is written. The tests
// run the go tool (`go list`), and skip, saying so, on a machine without
// one.
//
// What it is not: it checks imports between packages, not what a package
// does with them (purity of matcher and queue, determinism of fsm's Apply
// are other tests'); only its numbers test imports anything (fsm).
//
// TestDesignNumbers keeps DESIGN.md's log-format numbers true: the
// snapshot version it says the build writes is fsm.SnapshotVersion, and
// the command level it says the build applies is fsm.CommandLevel.
// TestChangesNumbers keeps CHANGES.md's history complete: its command type
// table ends at fsm.CommandLevel and its snapshot version table at
// fsm.SnapshotVersion. TestDesignLength keeps DESIGN.md at most 800 lines.
package archtest
