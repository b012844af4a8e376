package pki

import (
	"bytes"
	"fmt"
	"slices"
)

// GossipKeyring is the part of memberlist's *Keyring that InstallKeys
// uses; the servers and stubs pass theirs.
type GossipKeyring interface {
	GetKeys() [][]byte
	AddKey(key []byte) error
	UseKey(key []byte) error
	RemoveKey(key []byte) error
}

// KeyringChange is what InstallKeys changed, keys named by KeyID.
type KeyringChange struct {
	Added, Removed []string
	// Primary is the key that now encrypts; PrimaryChanged is set when it
	// was another before.
	Primary        string
	PrimaryChanged bool
}

// Changed reports whether InstallKeys changed anything.
func (c KeyringChange) Changed() bool {
	return len(c.Added) > 0 || len(c.Removed) > 0 || c.PrimaryChanged
}

// InstallKeys makes ring hold exactly keys (as ReadKeyring returns them),
// encrypting with keys[0]: it installs the keys ring lacks, uses the
// first, and removes the keys not in keys. A member that reloads its
// keyring file this way goes through the rotation steps without a moment
// in which it cannot read what its peers send: a new key is installed
// before it is used, and only keys no longer listed are removed.
//
// memberlist's RemoveKey shifts the keys after the one removed in place,
// under readers that hold the slice GetKeys returned (every received
// packet is decrypted so). InstallKeys therefore removes only the last
// key of the ring, which shifts nothing: it installs the new primary,
// removes, and installs the other new keys after. When a key to remove
// sits before one to keep, it first brings the kept keys forward with
// UseKey, which rebuilds the ring, so each of them encrypts for an
// instant; they are all keys the ring already held.
//
// It is not safe to call concurrently with itself on one ring.
func InstallKeys(ring GossipKeyring, keys [][]byte) (KeyringChange, error) {
	if len(keys) == 0 {
		return KeyringChange{}, fmt.Errorf("install gossip keys: %w: no key", ErrBadKeyring)
	}
	for i, k := range keys {
		if err := checkGossipKey(k); err != nil {
			return KeyringChange{}, fmt.Errorf("install gossip key %d: %w", i+1, err)
		}
	}
	old := slices.Clone(ring.GetKeys())
	want := func(k []byte) bool { return containsKey(keys, k) }
	ch := KeyringChange{Primary: KeyID(keys[0])}

	primary := keys[0]
	if !containsKey(old, primary) {
		if err := ring.AddKey(primary); err != nil {
			return ch, fmt.Errorf("install gossip key %s: %w", KeyID(primary), err)
		}
		ch.Added = append(ch.Added, KeyID(primary))
	}
	if len(old) == 0 || !bytes.Equal(old[0], primary) {
		if err := ring.UseKey(primary); err != nil {
			return ch, fmt.Errorf("use gossip key %s: %w", KeyID(primary), err)
		}
		ch.PrimaryChanged = true
	}

	// Bring the kept keys ahead of the ones to remove when one of these
	// is not last already.
	cur := ring.GetKeys()
	firstGone := slices.IndexFunc(cur, func(k []byte) bool { return !want(k) })
	if firstGone >= 0 && slices.ContainsFunc(cur[firstGone:], want) {
		kept := slices.DeleteFunc(slices.Clone(cur), func(k []byte) bool { return !want(k) })
		for i := len(kept) - 1; i >= 0; i-- {
			if err := ring.UseKey(kept[i]); err != nil {
				return ch, fmt.Errorf("reorder gossip keys: %w", err)
			}
		}
	}
	for {
		cur := ring.GetKeys()
		last := cur[len(cur)-1]
		if want(last) {
			break
		}
		id := KeyID(last)
		if err := ring.RemoveKey(slices.Clone(last)); err != nil {
			return ch, fmt.Errorf("remove gossip key %s: %w", id, err)
		}
		ch.Removed = append(ch.Removed, id)
	}

	for _, k := range keys[1:] {
		if !containsKey(old, k) {
			if err := ring.AddKey(k); err != nil {
				return ch, fmt.Errorf("install gossip key %s: %w", KeyID(k), err)
			}
			ch.Added = append(ch.Added, KeyID(k))
		}
	}
	return ch, nil
}

func containsKey(keys [][]byte, k []byte) bool {
	return slices.ContainsFunc(keys, func(x []byte) bool { return bytes.Equal(x, k) })
}
