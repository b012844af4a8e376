package pki

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/hashicorp/memberlist"
)

// LiveKeyring is a memberlist keyring kept equal to a keyring file: the
// servers' and stubs' gossip encryption. It is safe for concurrent use.
type LiveKeyring struct {
	path string
	ring *memberlist.Keyring
	mu   sync.Mutex // serializes reloads
}

// UseKeyring has memberlist encrypt gossip with the keys of the
// keyring file at path, the first encrypting, and refuse what is not
// encrypted with one of them.
func UseKeyring(mc *memberlist.Config, path string) (*LiveKeyring, error) {
	keys, err := ReadKeyring(path)
	if err != nil {
		return nil, err
	}
	ring, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return nil, fmt.Errorf("gossip keyring %s: %w", path, err)
	}
	mc.Keyring = ring
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	return &LiveKeyring{path: path, ring: ring}, nil
}

// Ring is the live memberlist keyring.
func (k *LiveKeyring) Ring() *memberlist.Keyring { return k.ring }

// Reload makes the keyring hold exactly the keys of its file
// (InstallKeys) and logs what changed. On an error the keys in use stay.
// It is a no-op on a nil keyring (a node started without one: memberlist
// cannot start encrypting while it runs).
func (k *LiveKeyring) Reload(log *slog.Logger) error {
	if k == nil {
		return nil
	}
	keys, err := ReadKeyring(k.path)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	ch, err := InstallKeys(k.ring, keys)
	if err != nil {
		return fmt.Errorf("reload gossip keyring %s: %w", k.path, err)
	}
	if !ch.Changed() {
		log.Info("gossip keyring reloaded: unchanged", "primary", ch.Primary, "keys", len(keys))
		return nil
	}
	log.Info("gossip keyring reloaded", "primary", ch.Primary, "primary_changed", ch.PrimaryChanged,
		"added", ch.Added, "removed", ch.Removed, "keys", len(keys))
	return nil
}
