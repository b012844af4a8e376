package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// twoUserCluster starts, for a test of how users share the pool, a
// 3-server TLS cluster of real processes with one stub, and makes two OS
// users (names beginning with prefixA and prefixB) who may reach it
// through the stub's socket. It returns the test's directory, the
// cluster, a client as the test's own (root) user and the two users. It
// skips, saying why, under -short, when not root, or without useradd,
// and marks the test parallel.
func twoUserCluster(t *testing.T, prefixA, prefixB string) (string, *servertest.ProcCluster, *client.Client, osUser, osUser) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs a cluster")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: the test creates OS users (useradd) and runs netmgr as them, which needs root")
	}
	for _, tool := range []string{"useradd", "userdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping: no %s on this machine to create the test's users: %v", tool, err)
		}
	}
	t.Parallel()
	dir := t.TempDir()
	openToEveryone(t, dir)
	openToEveryone(t, filepath.Dir(netmgrBinary(t)))
	c, root := procCluster(t, dir, 3, 1)
	if !c.Secure() {
		t.Fatal("the process cluster runs insecure; this test is about the secure one")
	}
	a, b := newOSUser(t, prefixA), newOSUser(t, prefixB)
	openToEveryone(t, filepath.Dir(c.Stubs[0].Socket))
	return dir, c, root, a, b
}
