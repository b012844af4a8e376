package gossip

import "slices"

// ReloadKeyring makes the node's keyring hold exactly the keys of its
// file, encrypting with the first (pki.InstallKeys: a new key is
// installed before it is used, and only keys no longer listed are
// removed, so a pool whose members reload one after the other through
// the rotation steps add, use and remove keeps reading every member's
// gossip), and logs what changed. On an error the keys in use stay and
// the error names the file. A node started without a keyring has nothing
// to reload: memberlist cannot start encrypting while it runs.
func (n *Node) ReloadKeyring() error {
	return n.keyring.Reload(n.log)
}

// Keys returns a copy of the keys the node holds, the one that encrypts
// first; none without a keyring.
func (n *Node) Keys() [][]byte {
	if n.keyring == nil {
		return nil
	}
	var out [][]byte
	for _, k := range n.keyring.Ring().GetKeys() {
		out = append(out, slices.Clone(k))
	}
	return out
}
