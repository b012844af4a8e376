package servertest_test

import (
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/sockettest"
)

func TestMain(m *testing.M) { sockettest.Main(m) }

// waitFor polls cond until it holds, failing the test after 15 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a wait for an outcome
	}
}
