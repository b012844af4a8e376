package pki

import (
	"fmt"
	"time"
)

// MakeCluster makes a throw-away CA in dir and a certificate for each of
// ids, valid for validity, and returns their files by identity. The dev
// agent, make demo and the tests use it; a real cluster makes its CA once
// with `netmgr tls ca create` and keeps the key apart.
func MakeCluster(dir string, validity time.Duration, ids ...Identity) (map[Identity]Files, error) {
	ca, err := NewCA("netmgr throw-away CA", validity)
	if err != nil {
		return nil, err
	}
	if err := ca.Write(dir); err != nil {
		return nil, fmt.Errorf("make cluster TLS material: %w", err)
	}
	out := make(map[Identity]Files, len(ids))
	for _, id := range ids {
		is, err := ca.Issue(id, nil, validity)
		if err != nil {
			return nil, err
		}
		if out[id], err = is.Write(dir); err != nil {
			return nil, fmt.Errorf("make cluster TLS material: %w", err)
		}
	}
	return out, nil
}
