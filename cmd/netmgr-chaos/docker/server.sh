#!/bin/sh
# server.sh ARG... runs one netmgr server in the foreground. The suite
# restarts a server by killing and starting its container, so there is no
# loop here: the container is the server.
exec /bin/netmgr server "$@"
