#!/bin/sh
# ldflags.sh prints the -ldflags value that links the build's version and
# commit into netmgr, as the Makefile's LDFLAGS does, for the scripts that
# build it themselves (demo.sh, bench-security.sh): without it `netmgr
# version` and netstatus -s's VERSION say "devel" whenever Go records no
# VCS information (a git worktree, GOFLAGS=-buildvcs=false, go run).
# VERSION and COMMIT in the environment win, as with make.
version=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
commit=${COMMIT:-$(git rev-parse HEAD 2>/dev/null)}
printf '%s\n' "-X main.version=$version -X main.commit=$commit"
