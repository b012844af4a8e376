# netmgr build, test and demo targets. `make help` lists them.

GO            ?= go
PREFIX        ?= /usr/local
BIN           := bin/netmgr
# staticcheck 2026.2.2; the first release line built for Go 1.26. The
# version is part of the path, so changing it installs the new one.
STATICCHECK_VERSION := v0.8.2
TOOLS_BIN     := $(CURDIR)/.tools/staticcheck-$(STATICCHECK_VERSION)
STATICCHECK   := $(TOOLS_BIN)/staticcheck
# The build's version and commit, linked into the binary (netmgr version);
# outside a git tree they are "unknown" and "".
VERSION       ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
COMMIT        ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS       := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# urfave_cli_no_docs leaves urfave/cli's Markdown and roff generators (and
# the Markdown parser under them) out of the binary: their package
# initialisation was a sixth of the instructions of `netexec --help`.
# `make man` runs a build without the tag (cmd/netmgr/man_nodocs.go).
BUILDTAGS     := urfave_cli_no_docs
# The commands reached through a symlink to the one binary (argv[0]).
ALIASES       := netexec netkill netstatus reserve unreserve
# How much `make fuzz` runs each fuzz target: a count of executions (Nx),
# not a duration. With a duration, Go's fuzzing coordinator can report
# its own deadline as a failure ("context deadline exceeded", no failing
# input written) when the worker is busy as the time runs out; CI met it
# on this 2-core VM. 100000 runs take under 10 s a target here.
FUZZTIME      ?= 100000x

.PHONY: all help build man install deb tools lint test fuzz demo bench bench-security clean

all: build

help:
	@echo "make build                 build $(BIN)"
	@echo "make man                   write the manual pages into man/man1/"
	@echo "make install PREFIX=DIR    install DIR/bin/netmgr, its command symlinks and man pages (default $(PREFIX))"
	@echo "make deb                   build the Debian package $(DEB) (binary, links, systemd units, sample config, man pages)"
	@echo "make tools                 install staticcheck $(STATICCHECK_VERSION) into .tools/ and a headless Chromium (dashboard test)"
	@echo "make lint                  gofmt, go vet, staticcheck"
	@echo "make test                  tools and lint, then the whole test suite under -race, then fuzz"
	@echo "make fuzz                  run each fuzz target FUZZTIME (default $(FUZZTIME): executions)"
	@echo "make demo                  run a 3-server, 2-stub cluster on 127.0.0.1 and a job"
	@echo "make bench                 latency and throughput figures (BENCH_QUICK=1 short, BENCH_FLAGS=-only ui)"
	@echo "make bench-security        the figures with TLS against --insecure, ABBA order (ORDER=, PAUSE=, BENCH_FLAGS=)"
	@echo "make chaos                 5 servers, 6 stubs in containers under seeded faults (DURATION=3m)"
	@echo "make clean                 remove bin/, man/, build/ and .tools/"

build:
	CGO_ENABLED=0 $(GO) build -tags $(BUILDTAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/netmgr

# The pages come from the same command definitions as --help, run from a
# build with the generators (without BUILDTAGS).
man:
	rm -rf man/man1
	CGO_ENABLED=0 $(GO) run -ldflags "$(LDFLAGS)" ./cmd/netmgr man man/man1

install: build man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/netmgr
	for a in $(ALIASES); do ln -sf netmgr $(DESTDIR)$(PREFIX)/bin/$$a; done
	install -m 0644 man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# The Debian package, built by nfpm (a Go tool pinned in go.mod's tool
# directive, run with go tool: nothing to install). packaging/nfpm.yaml
# lists what it holds. The version is the last vX.Y.Z tag's (v1.4.0 is
# 1.4.0, two commits later 1.4.0+2.gHASH), or with no tag the last
# commit's date and hash (0.0~git20261125.HASH), so later builds sort
# after earlier ones; DEB_VERSION=1.2.3 overrides it.
DEB_ARCH      ?= $(shell $(GO) env GOARCH)
DEB_VERSION   ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' 2>/dev/null) && echo "$$v" | sed 's/^v//; s/-/+/; s/-/./' || \
	git log -1 --format=0.0~git%cd.%h --date=format:%Y%m%d 2>/dev/null || echo 0.0~unknown)
DEB           := build/netmgr_$(DEB_VERSION)_$(DEB_ARCH).deb

deb: build man
	rm -rf build/deb && install -d build/deb/man
	for p in man/man1/*.1; do gzip -9n <$$p >build/deb/man/$$(basename $$p).gz; done
	rm -f $(DEB)
	DEB_ARCH=$(DEB_ARCH) DEB_VERSION=$(DEB_VERSION) $(GO) tool nfpm package \
		--config packaging/nfpm.yaml --packager deb --target $(DEB)
	@echo "built $(DEB)"

tools: $(STATICCHECK) browser

# The dashboard's end-to-end test (cmd/netmgr/dashboard_e2e_test.go)
# drives a headless Chromium; Debian's chromium-headless-shell is
# installed when no Chromium is on PATH and apt-get is. Without one the
# test skips, saying why, except under CI=true, where it fails.
.PHONY: browser
browser:
	@if command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium-headless-shell (the dashboard test's browser)"; \
		apt-get install -y chromium-headless-shell || { apt-get update && apt-get install -y chromium-headless-shell; } || \
		echo "could not install chromium-headless-shell; the dashboard test needs a Chromium"; \
	else echo "no apt-get: install a Chromium for the dashboard test (or set NETMGR_TEST_BROWSER)"; fi

$(STATICCHECK):
	GOBIN=$(TOOLS_BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(STATICCHECK)
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then echo "gofmt -l reports files needing formatting:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# test installs what the tests need first (tools: staticcheck and a headless
# Chromium), and says in one line what it will skip when that failed. The
# browser names are servertest.FindBrowser's. -parallel 4: the cluster
# tests that call t.Parallel mostly wait (elections, leases, outages), so
# four at a time on two cores keep them busy; the default, GOMAXPROCS,
# ran two.
test: tools lint
	@for b in $${NETMGR_TEST_BROWSER:-chromium-headless-shell chromium chromium-browser headless_shell google-chrome}; do \
		command -v $$b >/dev/null 2>&1 && exit 0; done; \
	echo "make test: no headless Chromium (make tools could not install one): the dashboard test will skip"
	$(GO) test -race -count=1 -parallel 4 -timeout 20m ./...
	$(MAKE) fuzz

# One go test per target: -fuzz takes a single target. One worker
# (-parallel 1), and no minimizing of the inputs that find new coverage
# (-fuzzminimizetime 0): each minimizing took the worker for up to its 60 s
# default, the "0/sec" stretches of the log, so 100000 runs of FuzzParse
# took 45-117 s instead of 7. A failing input is still written whole.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 -parallel 1 ./client/spec/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 -parallel 1 ./client/dblang/
	$(GO) test -run '^$$' -fuzz '^FuzzParseInit$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 -parallel 1 ./client/dblang/

demo:
	./scripts/demo.sh

bench: build
	$(GO) run ./cmd/netmgr-bench -netmgr $(BIN) $(BENCH_FLAGS)

# Secure (default) against -insecure passes of one binary, in ABBA order
# with pauses, then the comparison per figure (issue 15: within 15%).
bench-security:
	./scripts/bench-security.sh

clean:
	rm -rf bin .tools man build

# The chaos suite (cmd/netmgr-chaos): 5 servers and 6 stubs in Docker
# containers under a seeded fault schedule, then a checker. The image is
# FROM scratch, so both binaries are static and the shell is Debian's
# busybox-static, installed here when a Docker engine is present and it is
# missing. Without a Docker engine netmgr-chaos says so and exits 0.
# make chaos DURATION=30m runs a long schedule; CHAOS_FLAGS='-seed 42' or
# CHAOS_FLAGS='-schedule FILE' replays one.
DURATION    ?= 3m
CHAOS_FLAGS ?=
CHAOS_BIN   := bin/chaos

.PHONY: chaos
chaos:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(CHAOS_BIN)/netmgr ./cmd/netmgr
	CGO_ENABLED=0 $(GO) build -o $(CHAOS_BIN)/netmgr-chaos ./cmd/netmgr-chaos
	@if docker version >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && \
	    ! dpkg -s busybox-static >/dev/null 2>&1; then \
		echo "installing busybox-static (the chaos image's shell)"; \
		apt-get install -y busybox-static || { apt-get update && apt-get install -y busybox-static; }; \
	fi
	$(CHAOS_BIN)/netmgr-chaos -netmgr $(CHAOS_BIN)/netmgr -busybox /bin/busybox -duration $(DURATION) $(CHAOS_FLAGS)
