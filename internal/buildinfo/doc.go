// Package buildinfo says which build of netmgr is running: its version,
// the commit it was built from and the Go toolchain, read from the Go
// build information, with the version overridable at link time (the
// Makefile sets main.version from git describe and passes it in).
//
// It is a leaf: it imports nothing of netmgr, does no I/O and keeps no
// state, so the CLI and the server report the same thing.
package buildinfo
