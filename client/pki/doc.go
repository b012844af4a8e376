// Package pki makes and checks the certificates of a netmgr cluster.
//
// One cluster CA signs every certificate. A certificate says its role in
// its subject's organizational unit (server, stub or client) and its name
// in the common name: a server's name, the machine a stub runs on, or the
// user a client acts as. openssl shows both:
//
//	$ openssl x509 -noout -subject -in stub-flute.pem
//	subject=O=netmgr, OU=stub, CN=flute
//
// Peers check each other by the CA and the role, not by host name: a
// stub's API is reached at whatever address it reported, and what matters
// is that the certificate there names the machine the caller meant
// (Identity). Every link is TLS 1.3 and mutually authenticated where both
// ends hold certificates.
//
// Material holds a process's CA pool and certificate and reloads them from
// their files (on SIGHUP), so a rotated certificate takes effect without a
// restart; connections made before keep the certificate they began with.
//
// Gossip is not TLS: memberlist encrypts it with symmetric keys from a
// keyring file (ReadKeyring, WriteKeyring), the first key encrypting and
// every key decrypting, so that a new key can be rolled out without a
// moment in which two members cannot read each other.
//
// InstallKeys makes a live memberlist keyring hold exactly a file's keys:
// install the new primary, use it, remove the keys no longer listed,
// install the other new keys. That order makes the three-step rotation
// (add, use, remove) safe on each member whatever order members reload in.
// One subtlety: memberlist's RemoveKey shifts later keys in place within
// the slice that GetKeys handed to readers, which decrypt every received
// packet from it without a lock; InstallKeys therefore only ever removes
// the last key (which shifts nothing), first moving kept keys ahead with
// UseKey (which rebuilds the slice) when a key to remove sits before one
// to keep. The test checks that a slice a reader holds is never
// rewritten.
package pki
