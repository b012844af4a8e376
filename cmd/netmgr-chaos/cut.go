package main

import (
	"context"
	"fmt"
	"slices"
)

// cutScript is docker/cut.sh as the image holds it: it adds and removes
// the blackhole routes of the cut-stubs and isolate-stub faults. Only the
// stub containers may run it (they have NET_ADMIN).
const cutScript = "/chaos/cut.sh"

// cutPeers returns the nodes a cut fault's targets stop talking to: every
// server for cut-stubs, every other container for isolate-stub.
func cutPeers(t topology, kind string, targets []node) []node {
	if kind == faultCutStubs {
		return t.Servers
	}
	var out []node
	for _, n := range t.all() {
		if !slices.ContainsFunc(targets, func(m node) bool { return m.Name == n.Name }) {
			out = append(out, n)
		}
	}
	return out
}

// cutArgs is the docker command that runs cut.sh op (add or del) for
// peers in n's container.
func cutArgs(n node, op string, peers []node) []string {
	args := []string{"exec", n.Container, "sh", cutScript, op}
	for _, p := range peers {
		args = append(args, p.IP.String())
	}
	return args
}

// clearCuts removes every blackhole route from a running stub container.
func clearCuts(ctx context.Context, d *docker, n node) error {
	if _, err := d.run(ctx, "exec", n.Container, "sh", cutScript, "clear"); err != nil {
		return fmt.Errorf("clear cuts on %s: %w", n.Name, err)
	}
	return nil
}
