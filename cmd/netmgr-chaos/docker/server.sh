#!/bin/sh
# server.sh ARG... runs one netmgr server in the foreground. The suite
# restarts a server by killing and starting its container, so there is no
# loop here: the container is the server. The Compose file gives either
# the TLS material's files (mounted read-only at /tls) or --insecure.
exec /bin/netmgr server "$@"
