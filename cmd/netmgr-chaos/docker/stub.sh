#!/bin/sh
# stub.sh ARG... runs netmgr stub and starts it again whenever it exits:
# the suite kills the stub process alone (docker exec C kill PID) to model a
# stub restart, which must leave running jobs alone. The stub's pid is kept
# in /run/stub.pid for that kill and for the orphan check. The Compose
# file gives either the TLS material's files (mounted read-only at /tls) or
# --insecure.
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 0' TERM INT
while :; do
	/bin/netmgr stub "$@" &
	pid=$!
	echo "$pid" >/run/stub.pid
	wait "$pid"
	echo "stub.sh: netmgr stub exited with status $?; starting it again" >&2
	sleep 1
done
