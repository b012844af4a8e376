package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// errReserveNotImplemented is what reserve and unreserve answer today.
var errReserveNotImplemented = errors.New("not implemented yet (see the reservations issue)")

func reserveCommand() *cli.Command {
	return &cli.Command{
		Name:      "reserve",
		Usage:     "reserve machines for later use (not implemented yet)",
		UsageText: "reserve [options] MACHINE...\nnetmgr reserve [options] MACHINE...",
		Description: "Will reserve machines of the pool so that only your jobs run on them, as the\n" +
			"paper's reserve did, e.g. 'reserve flute viola'. Not implemented yet: it exits 1.\n\n" + retryNote,
		Flags:  clientFlags(),
		Action: func(*cli.Context) error { return errReserveNotImplemented },
	}
}

func unreserveCommand() *cli.Command {
	return &cli.Command{
		Name:      "unreserve",
		Usage:     "release machines you reserved (not implemented yet)",
		UsageText: "unreserve [options] MACHINE...\nnetmgr unreserve [options] MACHINE...",
		Description: "Will release machines reserved with reserve, e.g. 'unreserve flute'. Not\n" +
			"implemented yet: it exits 1.\n\n" + retryNote,
		Flags:  clientFlags(),
		Action: func(*cli.Context) error { return errReserveNotImplemented },
	}
}
