#!/bin/sh
# cut.sh add|del IP... | cut.sh clear: cut this container off from each IP
# (add), or mend the cut (del), with blackhole routes: what it sends there
# is dropped here, and what comes from there is dropped on arrival by
# strict reverse-path filtering (rp_filter=1, set in the Compose file).
# The interface, the address and every other peer stay, as when a switch
# port or a firewall rule cuts the traffic, not as when the cable is out
# (that is `docker network disconnect`). `clear` removes every blackhole
# route. Needs CAP_NET_ADMIN (cap_add in the Compose file).
op=$1
shift
status=0
case $op in
add)
	for ip; do
		ip route replace blackhole "$ip/32" || status=1
	done
	;;
del)
	# A route already gone is mended: the container may have restarted.
	for ip; do
		ip route del blackhole "$ip/32" 2>/dev/null
	done
	for ip; do
		if ip route | grep -qE "^blackhole $ip( |\$)"; then
			echo "cut.sh: blackhole route to $ip still there" >&2
			status=1
		fi
	done
	;;
clear)
	for ip in $(ip route | sed -n 's/^blackhole \([0-9.]*\).*/\1/p'); do
		ip route del blackhole "$ip/32" || status=1
	done
	;;
*)
	echo "usage: cut.sh add|del IP... | cut.sh clear" >&2
	exit 2
	;;
esac
exit "$status"
