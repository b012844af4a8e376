package main

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Ports inside the containers; every container has its own address, so
// all servers use the same ports.
const (
	apiPort        = 17646
	raftPort       = 17647
	gossipPort     = 17648
	stubPort       = 17656
	stubGossipPort = 17658
)

// project is the Compose project name; container names start with it.
const project = "nmchaos"

// imageName is the tag of the image the suite builds.
const imageName = "netmgr-chaos:latest"

// config is the suite's parameters.
type config struct {
	netmgr   string        // static netmgr binary
	busybox  string        // static busybox binary
	duration time.Duration // how long faults are injected
	seed     int64
	schedule string // file to replay instead of generating a schedule
	subnet   netip.Prefix
	portBase int // host port of s1's API on 127.0.0.1; s2 is portBase+1...
	servers  int
	stubs    int
	rate     time.Duration // time between submits
	drain    time.Duration // how long to wait for the work to finish
	keep     bool          // leave the containers and volumes behind
	insecure bool          // run without TLS (--insecure), as before issue 15
	outDir   string        // logs and the ledger; a temp dir when empty
	// maxWorkLost fails the run when more attempts than this were stopped
	// by whole-control-plane faults; negative: no limit.
	maxWorkLost int
}

// node is one container of the cluster.
type node struct {
	Name      string // server or machine name
	Container string
	IP        netip.Addr
	HostPort  int // servers only: the API published on 127.0.0.1
}

// topology names and addresses every container.
type topology struct {
	Servers []node
	Stubs   []node
}

// newTopology lays servers at .11, .12, ... and stubs at .21, .22, ...
// of the subnet.
func newTopology(cfg config) (topology, error) {
	if !cfg.subnet.Addr().Is4() || cfg.subnet.Bits() > 24 {
		return topology{}, fmt.Errorf("subnet %s: want an IPv4 prefix of /24 or wider", cfg.subnet)
	}
	if cfg.servers < 1 || cfg.servers > 9 || cfg.stubs < 1 || cfg.stubs > 60 {
		return topology{}, fmt.Errorf("want 1-9 servers and 1-60 stubs, got %d and %d", cfg.servers, cfg.stubs)
	}
	base := cfg.subnet.Masked().Addr().As4()
	at := func(n int) netip.Addr {
		a := base
		a[3] = byte(n)
		return netip.AddrFrom4(a)
	}
	var t topology
	for i := 1; i <= cfg.servers; i++ {
		name := fmt.Sprintf("s%d", i)
		t.Servers = append(t.Servers, node{Name: name, Container: project + "-" + name, IP: at(10 + i), HostPort: cfg.portBase + i - 1})
	}
	for i := 1; i <= cfg.stubs; i++ {
		name := fmt.Sprintf("stub%d", i)
		t.Stubs = append(t.Stubs, node{Name: name, Container: project + "-" + name, IP: at(20 + i)})
	}
	return t, nil
}

// join is the servers' gossip addresses, comma-separated.
func (t topology) join() string {
	var parts []string
	for _, s := range t.Servers {
		parts = append(parts, fmt.Sprintf("%s:%d", s.IP, gossipPort))
	}
	return strings.Join(parts, ",")
}

// server returns the server named name.
func (t topology) server(name string) (node, bool) {
	for _, s := range t.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return node{}, false
}

// all is every server and stub.
func (t topology) all() []node {
	return append(append([]node(nil), t.Servers...), t.Stubs...)
}

// ledgerContainer holds the ledger volume for the checker to read; it is
// on no network and never faulted.
const ledgerContainer = project + "-ledger"

// networkName is the Compose network as Docker names it.
const networkName = project + "_chaos"
