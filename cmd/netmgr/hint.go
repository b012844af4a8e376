package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/netmgr/netmgr/client"
)

// How long a command waits in silence, and how long it tries when it only
// guessed the server's address (no --addr, $NETMGR_ADDR, --socket or
// $NETMGR_SOCKET), before it says so.
const (
	waitNoticeAfter  = time.Second
	guessedAddrGrace = 500 * time.Millisecond
)

// noServerHint is printed under the error of a command that found no
// server where it guessed one would be.
var noServerHint = "No server address is set ($" + envAddr + " or --addr). To try netmgr on this machine,\n" +
	"run `netmgr agent --dev` in another shell and paste the export lines it prints;\n" +
	"to use a cluster, set " + envAddr + "=https://HOST:PORT to one of its servers."

// runInfo is what one run of the command line knows beyond its flags: the
// prefix of its messages and whether a client guessed the address. It
// travels in the context and belongs to the goroutine running the command.
type runInfo struct {
	prefix      string
	addrGuessed bool
}

type runInfoKey struct{}

// withRunInfo returns ctx carrying ri.
func withRunInfo(ctx context.Context, ri *runInfo) context.Context {
	return context.WithValue(ctx, runInfoKey{}, ri)
}

// runInfoFrom returns the runInfo in ctx, or a fresh one when there is none.
func runInfoFrom(ctx context.Context) *runInfo {
	if ri, ok := ctx.Value(runInfoKey{}).(*runInfo); ok {
		return ri
	}
	return &runInfo{prefix: "netmgr"}
}

// waitNotice returns the client option that prints, to w, what a request
// has waited for once it has waited a second.
func waitNotice(ri *runInfo, w io.Writer) client.Option {
	return client.WithWaitNotice(waitNoticeAfter, func(msg string) {
		fmt.Fprintf(w, "%s: %s\n", ri.prefix, printableLines(msg))
	})
}

// printHint prints what to do about err, when there is something to say.
func printHint(ri *runInfo, err error, w io.Writer) {
	if ri.addrGuessed && (errors.Is(err, client.ErrNoServer) || errors.Is(err, errNoWayIn)) {
		fmt.Fprintln(w, noServerHint)
	}
}
