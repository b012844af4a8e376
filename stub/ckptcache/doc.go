// Package ckptcache is a stub's local copy of the checkpoints its jobs
// kept, so that an attempt started again on the machine that kept its
// checkpoint (the usual case: a checkpoint exit restarts the job at once,
// on the same machine when it can) unpacks it from local disk instead of
// fetching it back from the servers.
//
// It owns one directory in the stub's data dir, holding archives named by
// their SHA-256 (the name the servers keep them under). It is a cache,
// not a store: a write is not synced, a read is checked against its name
// and a damaged entry is removed and reported missing, and it holds at
// most MaxEntries archives and MaxBytes bytes, the oldest removed first.
// The servers' copy, kept by a majority, stays the checkpoint of record;
// this package never decides which checkpoint an attempt gets (the Start
// names it).
package ckptcache
