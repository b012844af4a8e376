#!/usr/bin/env bash
# bench-security.sh: the issue 15 speed check. Runs netmgr-bench on one
# netmgr binary with secure clusters (TLS and authentication, the default)
# and with -insecure ones, in ABBA order (secure, insecure, insecure,
# secure) with a pause between passes, so that a machine that slows down
# or speeds up over the run weighs on both alike; records the load average
# (uptime) around every pass; then prints, per figure, the secure and
# insecure medians and their ratio (netmgr-bench -compare).
#
# ORDER="secure insecure insecure secure"   the passes, in order
# PAUSE=60                                  seconds between two passes
# BENCH_FLAGS=                              more netmgr-bench flags (e.g. -only latency)
# BENCH_OUT=DIR                             where the JSON, logs and comparison go (default: a new temp dir)
# BENCH_QUICK=1                             short passes, as for make bench
set -euo pipefail

cd "$(dirname "$0")/.."
order=${ORDER:-secure insecure insecure secure}
pause=${PAUSE:-60}
out=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/netmgr-bench-security.XXXXXX")}
mkdir -p "$out"

echo "==> building bin/netmgr and bin/netmgr-bench"
CGO_ENABLED=0 go build -ldflags "$(scripts/ldflags.sh)" -o bin/netmgr ./cmd/netmgr
go build -o bin/netmgr-bench ./cmd/netmgr-bench
echo "==> passes: $order; pause ${pause}s; results in $out"

files=()
n=0
for mode in $order; do
	case $mode in
	secure) flags=() ;;
	insecure) flags=(-insecure) ;;
	*)
		echo "bench-security: ORDER: unknown mode $mode (want secure or insecure)" >&2
		exit 2
		;;
	esac
	n=$((n + 1))
	if ((n > 1)); then
		echo "==> pause ${pause}s"
		# A pause cut short (its sleep killed from outside) only shortens it.
		sleep "$pause" || echo "==> pause cut short"
	fi
	base="$out/pass-$n-$mode"
	echo "==> pass $n: $mode; uptime: $(uptime)" | tee "$base.uptime"
	# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
	if ! bin/netmgr-bench -netmgr bin/netmgr -json "${flags[@]}" ${BENCH_FLAGS:-} >"$base.json" 2>"$base.log"; then
		echo "==> pass $n: netmgr-bench failed (see $base.log); its figures are kept" | tee -a "$base.uptime"
	fi
	echo "==> pass $n done; uptime: $(uptime)" | tee -a "$base.uptime"
	if [ -s "$base.json" ]; then
		files+=("$base.json")
	fi
done

if ((${#files[@]} == 0)); then
	echo "bench-security: no pass produced figures" >&2
	exit 1
fi
(
	IFS=,
	bin/netmgr-bench -compare "${files[*]}"
) | tee "$out/comparison.txt"
echo "==> comparison in $out/comparison.txt"
