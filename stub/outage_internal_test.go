package stub

import (
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestCountExpiredCountsAMajorityOfTheLargestPool(t *testing.T) {
	st := func(name string, expired bool, pos, size int) client.OutageStatement {
		return client.OutageStatement{Machine: name, Expired: expired, Position: pos, PoolSize: size}
	}
	for _, tc := range []struct {
		name        string
		sts         []client.OutageStatement
		known       int
		wantExpired int
		wantPool    int
	}{
		{"all expired", []client.OutageStatement{st("a", true, 1, 3), st("b", true, 2, 3), st("c", true, 3, 3)}, 3, 3, 3},
		{"one current", []client.OutageStatement{st("a", true, 1, 3), st("b", false, 2, 3)}, 3, 1, 3},
		{"duplicates count once", []client.OutageStatement{st("a", true, 1, 3), st("a", true, 1, 3)}, 3, 1, 3},
		// A peer that knows a larger pool raises the count's denominator.
		{"larger pool", []client.OutageStatement{st("a", true, 1, 2), st("b", true, 2, 5)}, 2, 2, 5},
		// A machine that does not know its place makes no statement.
		{"no position", []client.OutageStatement{st("a", true, 0, 3)}, 3, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, p := countExpired(tc.sts, tc.known)
			if e != tc.wantExpired || p != tc.wantPool {
				t.Errorf("countExpired = %d of %d, want %d of %d", e, p, tc.wantExpired, tc.wantPool)
			}
		})
	}
}
