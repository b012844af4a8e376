// Package procinfo reads the few things the stub and its supervisors take
// from Linux's /proc: a process's stat line (state, process group,
// resident memory), the process ids, MemTotal, the mount table and the
// load average.
//
// It replaces prometheus/procfs in the one netmgr binary, whose package
// initialisation (about thirty regexps for files netmgr never reads)
// every command users type paid; this package does nothing at init.
package procinfo
