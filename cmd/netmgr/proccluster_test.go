package main

import (
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/server/servertest"
)

// The netmgr binary the process tests run, built once for the package.
var (
	buildOnce sync.Once
	buildDir  string
	builtBin  string
	buildErr  error
)

// TestMain removes the shared build after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// netmgrBinary returns the netmgr binary built for this package's tests.
func netmgrBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "netmgr-cmd-test-"); buildErr == nil {
			builtBin, buildErr = servertest.BuildBinary(buildDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// procCluster starts the package's netmgr binary as server and stub
// processes under dir, waits for a leader and every machine, and returns the
// cluster and a client acting as the current user (a stub running as root
// runs jobs as their owner, who must be a real user). The processes stop
// at cleanup; their logs are printed if the test failed.
func procCluster(t *testing.T, dir string, servers, stubs int) (*servertest.ProcCluster, *client.Client) {
	t.Helper()
	return procClusterArgs(t, dir, servers, stubs, nil)
}

// procClusterArgs is procCluster with serverArgs added to every server's
// command line.
func procClusterArgs(t *testing.T, dir string, servers, stubs int, serverArgs []string) (*servertest.ProcCluster, *client.Client) {
	t.Helper()
	c, err := servertest.StartProcClusterArgs(netmgrBinary(t), filepath.Join(dir, "cluster"), servers, stubs, serverArgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(6000))
		}
	})
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitMachines(stubs, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client(client.WithUser(me.Username))
	if err != nil {
		t.Fatal(err)
	}
	return c, cl
}

// commandLinks makes dir/links with a symlink to bin for each of names
// (netexec, netstatus, ...), as make install does, and returns its path.
func commandLinks(t *testing.T, dir, bin string, names ...string) string {
	t.Helper()
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := os.Symlink(bin, filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	return links
}
