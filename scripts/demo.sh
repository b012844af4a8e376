#!/usr/bin/env bash
# demo.sh: build netmgr, make a throw-away CA, run 3 servers and 2 stubs
# on 127.0.0.1 with TLS and encrypted gossip, run a 3-instance job through
# netexec (over stub1's socket, as the user running the demo), show
# netstatus, and stop everything.
#
# Ports: servers HTTP 17701-17703, Raft 17711-17713, gossip 17721-17723;
# stubs HTTP 17731-17732, gossip 17741-17742. Data lives in a mktemp dir that
# is removed on exit (set KEEP=1 to keep it and its logs).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD

echo "==> building bin/netmgr"
CGO_ENABLED=0 go build -ldflags "$(scripts/ldflags.sh)" -o bin/netmgr ./cmd/netmgr

tmp=$(mktemp -d "${TMPDIR:-/tmp}/netmgr-demo.XXXXXX")
pids=()

stop_all() {
	local status=$?
	trap - EXIT INT TERM
	if ((${#pids[@]})); then
		echo "==> stopping ${#pids[@]} processes"
		kill -TERM "${pids[@]}" 2>/dev/null || true
		local deadline=$((SECONDS + 10))
		for pid in "${pids[@]}"; do
			while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
				sleep 0.1
			done
			kill -KILL "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		done
	fi
	if ((status != 0)); then
		for log in "$tmp"/*.log; do
			[[ -e $log ]] || continue
			echo "---- tail of $log"
			tail -n 20 "$log"
		done
	fi
	if [[ ${KEEP:-} == 1 ]]; then
		echo "==> kept $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Symlinks select the commands by argv[0], as an install does.
for cmd in netexec netstatus netkill; do
	ln -s "$root/bin/netmgr" "$tmp/$cmd"
done
export PATH="$tmp:$PATH"
export NETMGR_ADDR=https://127.0.0.1:17701,https://127.0.0.1:17702,https://127.0.0.1:17703
# The job commands reach the servers through stub1's socket, as the user
# running the demo; the servers trust stub1's certificate to vouch for it.
export NETMGR_SOCKET=$tmp/stub1.sock
unset NETMGR_TOKEN NETMGR_CLIENT_CERT NETMGR_CLIENT_KEY

echo "==> making a throw-away CA, certificates and gossip key in $tmp/tls"
tls=$tmp/tls
"$root/bin/netmgr" tls ca create --dir "$tls" >/dev/null
for i in 1 2 3; do "$root/bin/netmgr" tls cert create --ca-dir "$tls" --server "server$i" >/dev/null; done
for i in 1 2; do "$root/bin/netmgr" tls cert create --ca-dir "$tls" --stub "stub$i" >/dev/null; done
"$root/bin/netmgr" tls gossip-key create "$tls/gossip.keyring" >/dev/null
# The demo may run as root: let root's jobs run as root.
printf 'allow_root_jobs\n' >"$tmp/demo.db"
secure() { # secure ROLE NAME: the TLS and gossip flags of one process
	echo --ca-file "$tls/ca.pem" --cert-file "$tls/$1-$2.pem" --key-file "$tls/$1-$2-key.pem" --gossip-keyring "$tls/gossip.keyring"
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds.
wait_for() {
	local limit=$1 what=$2
	shift 2
	local deadline=$((SECONDS + limit))
	until "$@"; do
		if ((SECONDS >= deadline)); then
			echo "demo: timed out after ${limit}s waiting for $what" >&2
			return 1
		fi
		sleep 0.2
	done
}

for port in 17701 17702 17703 17711 17712 17713 17721 17722 17723 17731 17732 17741 17742; do
	if listening "$port"; then
		echo "demo: port 127.0.0.1:$port is already in use; stop whatever holds it and retry" >&2
		exit 1
	fi
done

start() { # start NAME ARGS...: run bin/netmgr ARGS in the background, logging to NAME.log
	local name=$1
	shift
	"$root/bin/netmgr" "$@" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
}

echo "==> starting 3 servers and 2 stubs (data and logs in $tmp)"
gossip_servers=127.0.0.1:17721,127.0.0.1:17722,127.0.0.1:17723
for i in 1 2 3; do
	join=()
	if ((i > 1)); then join=(--join 127.0.0.1:17721); fi
	# shellcheck disable=SC2046 # secure prints flags meant to split
	start "server$i" server --config= $(secure server "server$i") --database "$tmp/demo.db" --name "server$i" --data-dir "$tmp/server$i" \
		--http "127.0.0.1:1770$i" --raft "127.0.0.1:1771$i" --gossip "127.0.0.1:1772$i" \
		--bootstrap-expect 3 "${join[@]}"
	if ((i == 1)); then wait_for 20 "server1 to listen" listening 17721; fi
done
for i in 1 2; do
	# shellcheck disable=SC2046 # secure prints flags meant to split
	start "stub$i" stub --config= $(secure stub "stub$i") --socket "$tmp/stub$i.sock" --name "stub$i" --data-dir "$tmp/stub$i" --exec-dir "$tmp/stub$i/exec" \
		--http "127.0.0.1:1773$i" --gossip "127.0.0.1:1774$i" --join "$gossip_servers"
done

has_leader() { netstatus -s --json 2>/dev/null | grep -Eq '"role" *: *"leader"'; }
two_up() { [[ $(netstatus -m --json 2>/dev/null | grep -Eo '"state" *: *"up"' | wc -l) -ge 2 ]]; }
wait_for 60 "a leader" has_leader
wait_for 60 "2 machines up" two_up

echo
echo "\$ netexec -n 3 --wait done /bin/sh -c 'echo hello from \$NETMGR_MACHINE instance \$NETMGR_INSTANCE'"
# shellcheck disable=SC2016 # the job's shell expands these, not this one
netexec -n 3 --wait done /bin/sh -c 'echo hello from $NETMGR_MACHINE instance $NETMGR_INSTANCE'
echo
echo "==> the job's output, as the stubs kept it"
grep -rh "hello from" "$tmp"/stub*/exec "$tmp"/stub*.log 2>/dev/null | sort -u || echo "(no output found under $tmp)"

for view in -j -m -s; do
	echo
	echo "\$ netstatus $view"
	netstatus "$view"
done
echo
echo "==> demo done"
