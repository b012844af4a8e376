// Package gossip is the one memberlist node that servers and stubs run
// to form the gossip pool: it builds the memberlist configuration (the
// bind and advertise addresses, compression off), encrypts with the
// keyring file and reloads it (client/pki's LiveKeyring and InstallKeys),
// logs gossip refused for want of the right key as one plain warning per
// peer host a minute (internal/warnlimit), serves the node's metadata and
// gossips its changes, and joins and leaves the pool.
//
// It owns the node, not the pool's meaning. It does not decide
// membership, liveness or leases (the server's leader does, from the
// events it is handed and the stubs' lease renewals); it does not know
// what the metadata says (each wing encodes and reads its own
// client.NodeMeta); it does not decide when to join again (the server
// retries its --join addresses, the stub its rejoin loop). Membership
// events go, as memberlist gives them, to the memberlist.EventDelegate
// the caller passes, which must copy and hand off without blocking.
package gossip
