#!/usr/bin/env bash
# cli-floor.sh: what a Go command costs to start before it does anything
# of its own (issue 20 point 11). Builds five programs that print one
# line and exit, each linking a little more of what `netexec` needs, plus
# netmgr itself, and runs each RUNS times under `perf stat`:
#
#   hello        the Go runtime and os alone
#   +net         net/http, crypto/tls and encoding/json (an HTTPS client)
#   +cli         the same with urfave/cli/v2 (the CLI library the project names)
#   +client      the same with netmgr's client and client/spec packages
#                (what a user command needs: a second, small binary)
#   netexec      bin/netmgr reached through a netexec link, --help
#
# Prints each one's task-clock (ms of CPU) and page faults, perf's mean of
# RUNS runs with its spread. The programs are built in a temporary
# package directory inside the module (removed on exit) with the flags of
# `make build`.
#
# RUNS=50   runs of each program
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${RUNS:-50}
command -v perf >/dev/null || { echo "cli-floor: needs perf (Debian: linux-perf)" >&2; exit 2; }

pkg=$(mktemp -d ./cmd/.clifloor.XXXXXX)
bin=$(mktemp -d "${TMPDIR:-/tmp}/clifloor.XXXXXX")
trap 'rm -rf "$pkg" "$bin"' EXIT

# program NAME IMPORTS USES: one main package importing IMPORTS (quoted
# import paths, one per line) and mentioning USES so the linker keeps them.
program() {
	mkdir -p "$pkg/$1"
	cat >"$pkg/$1/main.go" <<EOF
package main

import (
	"os"
$2
)

$3

func main() { _, _ = os.Stdout.WriteString("usage: $1\n") }
EOF
	CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$bin/$1" "./${pkg#./}/$1"
}

net_imports=$'\t"crypto/tls"\n\t"encoding/json"\n\t"net/http"'
net_uses='var _, _, _ = tls.VersionTLS13, json.Marshal, http.Get'
cli_imports=$net_imports$'\n\t"github.com/urfave/cli/v2"'
cli_uses=$net_uses$'\nvar _ = (&cli.App{Name: "x"}).Run'
client_imports=$cli_imports$'\n\t"github.com/netmgr/netmgr/client"\n\t"github.com/netmgr/netmgr/client/spec"'
client_uses=$cli_uses$'\nvar _, _ = client.New, spec.Parse'

program hello "" ""
program net "$net_imports" "$net_uses"
program cli "$cli_imports" "$cli_uses"
program client "$client_imports" "$client_uses"
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$bin/netmgr" ./cmd/netmgr
ln -s netmgr "$bin/netexec"

printf '%-10s %14s %14s %10s\n' program "cpu ms" "page faults" "size MB"
for p in hello net cli client netexec; do
	args=()
	[ "$p" = netexec ] && args=(--help)
	stat=$(perf stat -x, -r "$runs" -e task-clock,page-faults "$bin/$p" "${args[@]}" 2>&1 >/dev/null)
	cpu=$(awk -F, '/task-clock/ {printf "%.2f +-%s", $1, $4}' <<<"$stat")
	faults=$(awk -F, '/page-faults/ {printf "%d +-%s", $1, $4}' <<<"$stat")
	size=$(stat -L -c %s "$bin/$p" | awk '{printf "%.1f", $1/1e6}')
	printf '%-10s %14s %14s %10s\n' "$p" "$cpu" "$faults" "$size"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
