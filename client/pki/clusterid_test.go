package pki_test

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// TestClusterID checks that a cluster's id is 16 hex digits, the same on
// every load of its CA, and differs between two CAs.
func TestClusterID(t *testing.T) {
	ids := make([]string, 2)
	for i := range ids {
		ca, err := pki.NewCA("cluster", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := ca.Write(dir); err != nil {
			t.Fatal(err)
		}
		var again string
		for j := range 2 {
			m, err := pki.Load(pki.Files{CA: filepath.Join(dir, pki.CAFile)})
			if err != nil {
				t.Fatal(err)
			}
			if j == 0 {
				ids[i] = m.ClusterID()
			} else {
				again = m.ClusterID()
			}
		}
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(ids[i]) || again != ids[i] {
			t.Errorf("cluster id %q, then %q: want the same 16 hex digits", ids[i], again)
		}
	}
	if ids[0] == ids[1] {
		t.Errorf("two CAs share cluster id %s", ids[0])
	}
}
