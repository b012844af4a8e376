package servertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreePorts returns n distinct ports on 127.0.0.1 that were free for both
// TCP and UDP a moment ago, for tests that start servers and stubs with
// addresses of their own (configuration files, containers on the host's
// network). Another process may take one before the test binds it; the
// test then fails at start, naming the address.
func FreePorts(n int) ([]int, error) { return freePorts(n) }

// freePorts returns n distinct ports on 127.0.0.1 that were free for both
// TCP and UDP (memberlist uses both) a moment ago. All probes stay open
// until every port is chosen, so the ports are distinct.
//
// The ports are drawn at random from below the kernel's ephemeral range
// (ip_local_port_range) where there is room: a port the kernel handed out
// for ":0" could be handed out again, between the probe and the process's
// bind, as the source port of any test's outgoing connection ("bind:
// address already in use"); a port below the range never is.
func freePorts(n int) ([]int, error) {
	var closers []func()
	defer func() {
		for _, f := range closers {
			f()
		}
	}()
	lo, hi := fixedPortRange()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 50*n {
			return nil, fmt.Errorf("find %d free ports: too many collisions", n)
		}
		addr := "127.0.0.1:0"
		if hi > lo {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo)))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if hi > lo {
				continue // taken: draw again
			}
			return nil, fmt.Errorf("find free port: %w", err)
		}
		closers = append(closers, func() { l.Close() })
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		closers = append(closers, func() { u.Close() })
		if !handOut(port) {
			continue // given to another test of this process, maybe not bound yet
		}
		ports = append(ports, port)
	}
	return ports, nil
}

// handedOut is every port freePorts has returned in this process: tests
// that run in parallel draw from the same range, and a port handed to one
// is free until its process binds it, so a second draw could return it
// again.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// handOut records port as handed out and reports whether it was not
// already.
func handOut(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	handedOut.ports[port] = true
	return true
}

// fixedPortRange is [lo, hi): the ports freePorts draws from, 10000 up to
// the start of the ephemeral range; empty (lo == hi) when that range
// cannot be read or leaves under 1000 ports below it, and freePorts then
// takes ports from the kernel.
func fixedPortRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start-10000 < 1000 {
		return 0, 0
	}
	return 10000, start
}
