// Package blobstore keeps content-addressed blobs in a directory of a
// server's data dir: each blob is the file named by its sha256 (hex),
// written whole (a temporary file, synced, then renamed) after its bytes
// are checked against the name, so a blob in the store is always complete
// and correct. The servers keep the files jobs move (copy_in and
// copy_out archives) here, beside the Raft log, which names them by hash.
//
// # Files in and out: a replicated blob store beside Raft
//
// copy_in, copy_out, `netexec --copy-binary` and `netmgr fetch` (issue 16).
// The bytes go beside Raft, the names in it. Each server keeps a
// content-addressed store, DATA-DIR/blobs/<sha256> (server/blobstore:
// written to a temporary file, synced, renamed; checked against its name
// when written and when read, a damaged one removed and fetched again). A
// job's files are one tar archive (client/files), so a job names one hash,
// not a list.
//
// In: netexec packs copy_in (each path under its base name; a binary or
// argument naming one is rewritten to ./NAME) and PUTs it to any server
// (`PUT /v1/blobs/{sum}`, a user or stub certificate, the user socket's
// relay lets such bodies through up to 1 GiB; the server's --max-copy-size,
// default 64 MiB, answers 413 with the limit). That server stores it and
// pushes it to every other voter (`PUT /v1/peer/blobs/{sum}`, server
// certificates only) and answers once a majority of the voters, itself
// counted, hold it; the other pushes go on in the background. Only then
// does netexec submit the job, whose spec names the hash
// (JobSpec.CopyInBlob; a SubmitFiles entry, command level 37, so an older
// replica stops rather than run the job without its files). The leader
// checks at submit that it has the blob, fetching it from a peer if not,
// and the size. So a committed job never names a blob that one server's
// loss could take: a majority held it before the entry existed, and any
// majority of servers later meets that one. The stub fetches the archive
// (`GET /v1/blobs/{sum}`, stub certificate; only a stub whose machine has
// an instance of the job placed on it may) from any server (a follower that
// would refuse redirects to the leader), which fetches it from a peer when
// it lacks it, checks the hash, and unpacks it into the exec dir before the
// job starts (a failure fails the attempt with a copy_in: error).
//
// Out: when an attempt ends, before its CHILD_TERM is recorded, the stub
// packs the copy_out globs from the exec dir (up to the limit; what matched
// nothing or passed the limit is listed with why), has a majority keep the
// archive the same way, and has the leader commit OutputsKept (level 38:
// job, instance, attempt, hash, files, what was lost). The job keeps one
// per instance, its latest attempt's (Job.Outputs, snapshot version 12).
// Since the end is recorded only after that, a job seen ended has its
// outputs kept, `--wait done` can fetch at once, and the exec dir sweeper
// (which waits for the recorded end) never removes files not yet kept. A
// stub stopped in between records no end: the next stub finds the
// supervisor's result and sends the outputs again (same hash, same entry).
// The price: while no server can be reached (an outage of the whole group),
// an ended attempt with copy_out has no recorded end; the stub retries
// (backing off to 5 s) and its supervisor's result file keeps the end
// durable meanwhile, but the stub counts the attempt as running until then.
// On restart that settling runs in a watcher goroutine, since the servers
// are known only once the stub runs (the fault test found the stub hung in
// New otherwise). `netmgr fetch` reads Job.Outputs and the blobs (a user
// may read a blob only if a job they may act on names it), verifies and
// unpacks them, and exits 1 listing what was not kept and why.
//
// Checkpoints (JobSpec.Checkpoint, command level 42) use the same path:
// an attempt that exits with its job's checkpoint code has its checkpoint
// paths packed (stub/checkpoints.go), kept by a majority, and committed
// as CheckpointKept (POST /v1/checkpoints, server/http_checkpoints.go,
// which refuses with 413 one past its owner's quota, counting the
// instance's previous checkpoint out); the instance's newest is the one
// every later attempt's Start names (StartRequest.CheckpointBlob) and its
// stub unpacks as it does copy_in. The checkpoint it replaces is named by
// no job any more, so the garbage rule below removes it.
//
// Garbage: every minute each server removes the blobs that no job of the
// live state names and that are older than 10 minutes (so an upload whose
// Submit is on its way is not taken); a job leaves the state at its
// retention (JobsExpire), and its files go with it. /metrics has
// netmgr_blob_store_bytes and _blobs, and `netstatus -s` each server's
// FILES (client.Server.FilesBytes, from its own `GET /v1/agent/self`).
//
// Why not chunked Raft entries: 64 MiB of entries would go through every
// server's log, snapshot and restore (the state machine is in memory), and
// a 10 MiB job would stall the log others commit through. The side store
// costs one extra request (the upload) and a hash per job with files, and
// nothing for jobs without files: their path is unchanged (bench suite
// files: 10 MiB of copy_in reaches running in a median 283 ms on a 2-core
// VM at load 10, 581 ms at load 40, against 4.6 and 12 ms for the same job
// without files). What it gives up: a blob pushed to a minority before a
// server dies is kept there until swept; a server that was down during an
// upload holds the blob only once something asks it (it fetches from a
// peer); the store is not rebalanced after a permanent server loss, so with
// 3 servers a blob held by 2, one of which is replaced, has one copy until
// a read refetches it. The stub's fetch reads the whole archive into memory
// (at most the limit), inside the Start: a Start whose files take longer
// than the dispatcher's 5 s send timeout is sent again (the stub answers
// the repeat once the first is done), and the other Starts of its batch
// wait for their answer as long. A stub that predates
// StartRequest.CopyInBlob would run the job without its files; upgrade the
// stubs before using copy_in.
package blobstore
