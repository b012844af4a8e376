package server

import (
	"testing"

	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/fsm"
)

// Parity tests of database.go's translators: every field crosses, or is
// listed with the reason it does not (parity_internal_test.go).

// Where a declaration stands in the database file: for the parser's and
// the checks' messages, not part of the database.
var declPositions = map[string]string{
	"Keys[].Pos":         "where the declaration stands in the file, for messages; not part of the database",
	"MTypes[].Pos":       "as Keys[].Pos",
	"Machines[].Pos":     "as Keys[].Pos",
	"Queues[].Pos":       "as Keys[].Pos",
	"Accounts[].Pos":     "as Keys[].Pos",
	"Shares[].Pos":       "as Keys[].Pos",
	"Licenses[].Pos":     "as Keys[].Pos",
	"Queues[].Prime.Pos": "as Keys[].Pos",
}

func TestDatabaseToLogParity(t *testing.T) {
	src := fillNew[dblang.Database](new(filler))
	checkParity(t, src, databaseToLog(&src), crossing{dropped: declPositions})
}

func TestDatabaseFromLogParity(t *testing.T) {
	src := fillNew[fsm.Database](new(filler))
	checkParity(t, src, *databaseFromLog(&src), crossing{derived: declPositions})
}
