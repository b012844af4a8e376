package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/fsm"
)

// The blob store quota per user: the bytes a user's jobs keep in the blob
// store. A user's use is
//
//   - the blobs their live jobs name (fsm.View.UserBlobs: copy_in
//     archives and kept outputs, each blob once, at its recorded size),
//     the same on every server; and
//   - the blobs they PUT to this server in the last blobGrace that no job
//     of theirs names yet (blobUploads, in this server's memory): an
//     upload whose submit is on its way, or one never submitted, which the
//     sweeper removes after that grace (blobs.go), when it leaves the
//     count too.
//
// PUT /v1/blobs checks the quota before it keeps anything: from the
// request's Content-Length when it has one, before reading the body, and
// again with the body's size, recording the upload under the same lock
// so that concurrent uploads see each other. Submit checks it again on
// the leader, with the job's copy_in added unless already counted: an
// upload to another server is not in the leader's memory, and uploads
// that were each within the quota may not be together. Outputs a stub
// keeps for an attempt are counted but never refused (the attempt has
// run); they can push a user past the quota, whose next copy_in is then
// refused. Blobs of the same content kept for two users count for each.

// upload is a blob a user PUT to this server.
type upload struct {
	size int64
	at   time.Time
}

// blobUploads remembers, per user, the blobs they PUT to this server in
// the last blobGrace. Safe for concurrent use.
type blobUploads struct {
	mu     sync.Mutex // guards byUser
	byUser map[string]map[string]upload
}

func newBlobUploads() *blobUploads {
	return &blobUploads{byUser: make(map[string]map[string]upload)}
}

// usage adds up user's use at now: the blobs named (their sizes) and
// the user's uploads since blobGrace that named lacks, forgetting older
// uploads. counted reports whether sum is in it already.
func (u *blobUploads) usage(user string, named map[string]int64, sum string, now time.Time) (used int64, counted bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.usageLocked(user, named, sum, now)
}

// usageLocked is usage with u.mu held.
func (u *blobUploads) usageLocked(user string, named map[string]int64, sum string, now time.Time) (used int64, counted bool) {
	for _, n := range named {
		used += n
	}
	_, counted = named[sum]
	ups := u.byUser[user]
	for s, up := range ups {
		switch {
		case now.Sub(up.at) >= blobGrace:
			delete(ups, s)
		case !hasKey(named, s):
			used += up.size
			counted = counted || s == sum
		}
	}
	if len(ups) == 0 {
		delete(u.byUser, user)
	}
	return used, counted
}

// hasKey reports whether m has key k.
func hasKey(m map[string]int64, k string) bool {
	_, ok := m[k]
	return ok
}

// reserve records user's upload of sum (size bytes) at now, unless it is
// not counted yet and would take user's use past quota (no limit when
// quota <= 0). It returns the use before it and whether it recorded it.
func (u *blobUploads) reserve(user, sum string, size int64, named map[string]int64, quota int64, now time.Time) (used int64, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	used, counted := u.usageLocked(user, named, sum, now)
	if !counted && quota > 0 && used+size > quota {
		return used, false
	}
	if u.byUser[user] == nil {
		u.byUser[user] = make(map[string]upload)
	}
	u.byUser[user][sum] = upload{size: size, at: now}
	return used, true
}

// forget drops user's upload of sum, which was not kept.
func (u *blobUploads) forget(user, sum string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ups := u.byUser[user]; ups != nil {
		delete(ups, sum)
		if len(ups) == 0 {
			delete(u.byUser, user)
		}
	}
}

// namedBlobs returns the blobs user's live jobs name, with their sizes.
func (s *Server) namedBlobs(user string) map[string]int64 {
	var named map[string]int64
	s.fsm.Read(func(v fsm.View) { named = v.UserBlobs(user) })
	return named
}

// quotaError is the refusal of size more bytes of files for user, whose
// jobs keep used already.
func (s *Server) quotaError(op, user string, used, size int64) error {
	return fmt.Errorf("%s: %w: %s's jobs keep %s in the blob store and these files are %s more, past this pool's limit of %s per user; "+
		"files leave the store with their jobs (at the servers' --job-retention), or ask the admins to raise the servers' --user-blob-quota",
		op, errBlobQuota, user, files.Size(used), files.Size(size), files.Size(s.limits.quota))
}

// checkUploadQuota refuses, with 413, a PUT of files by a user that its
// Content-Length shows would pass the user's quota, before the body is
// read. It reports whether the upload may go on.
func (s *Server) checkUploadQuota(w http.ResponseWriter, r *http.Request, p principal, sum string) bool {
	if p.User == "" || s.limits.quota <= 0 || r.ContentLength < 0 {
		return true
	}
	used, counted := s.limits.uploads.usage(p.User, s.namedBlobs(p.User), sum, time.Now())
	if counted || used+r.ContentLength <= s.limits.quota {
		return true
	}
	s.refuseLimit(w, r, p, &denial{http.StatusRequestEntityTooLarge, denyBlobQuota,
		s.quotaError("keep files", p.User, used, r.ContentLength)})
	return false
}

// reserveUpload records a user's upload of sum (size bytes) when it keeps
// them within their quota, or refuses it with 413 before anything is
// kept. It reports whether the upload may go on; the caller forgets the
// upload when it is not kept after all.
func (s *Server) reserveUpload(w http.ResponseWriter, r *http.Request, p principal, sum string, size int64) bool {
	if p.User == "" {
		return true
	}
	used, ok := s.limits.uploads.reserve(p.User, sum, size, s.namedBlobs(p.User), s.limits.quota, time.Now())
	if !ok {
		s.refuseLimit(w, r, p, &denial{http.StatusRequestEntityTooLarge, denyBlobQuota,
			s.quotaError("keep files", p.User, used, size)})
	}
	return ok
}

// checkSubmitQuota refuses, on the leader, a job of owner whose copy_in
// would keep owner's use past the quota: it returns the status and error
// to answer with, or zero and nil. A copy_in another live job of owner's
// names already adds nothing and is never refused.
func (s *Server) checkSubmitQuota(owner string, spec *fsm.JobSpec) (int, error) {
	if owner == "" || s.limits.quota <= 0 || spec.CopyInBlob == "" {
		return 0, nil
	}
	named := s.namedBlobs(owner)
	if hasKey(named, spec.CopyInBlob) {
		return 0, nil
	}
	used, counted := s.limits.uploads.usage(owner, named, spec.CopyInBlob, time.Now())
	if counted {
		used -= spec.CopyInSize // shown as the files that pass it
	}
	if used+spec.CopyInSize <= s.limits.quota {
		return 0, nil
	}
	return http.StatusRequestEntityTooLarge, s.quotaError("copy_in", owner, used, spec.CopyInSize)
}
