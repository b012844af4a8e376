#!/bin/sh
# job.sh SECONDS FAIL_FIRST: the chaos workload's job. It appends to the
# ledger /ledger/JOB.INSTANCE (O_APPEND, one write per line)
#   start JOB INSTANCE ATTEMPT HOST TIME
#   beat  JOB INSTANCE ATTEMPT HOST TIME     once a second while it runs
#   end   JOB INSTANCE ATTEMPT HOST TIME STATUS
# TIME is the kernel's seconds since boot (/proc/uptime), a clock every
# container on the host shares. With FAIL_FIRST=1 attempt 1 exits 3, so a
# restart policy has something to restart.
secs=$1
fail=${2:-0}
f=/ledger/$NETMGR_JOB_ID.$NETMGR_INSTANCE
rec() {
	read -r up _ </proc/uptime
	echo "$1 $NETMGR_JOB_ID $NETMGR_INSTANCE $NETMGR_ATTEMPT $NETMGR_MACHINE $up $2" >>"$f"
}
rec start
i=0
while [ "$i" -lt "$secs" ]; do
	sleep 1
	i=$((i + 1))
	rec beat
done
status=0
if [ "$fail" = 1 ] && [ "$NETMGR_ATTEMPT" = 1 ]; then
	status=3
fi
rec end "$status"
exit "$status"
