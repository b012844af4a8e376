package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/blobstore"
)

// Files a job moves (copy_in, copy_out) travel beside Raft, not in it: a
// blob store in each server's data dir (blobs/<sha256>) holds the
// archives, and the Raft log names them by hash (JobSpec.CopyInBlob,
// OutputsKept.Blob). A server that receives a blob (PUT /v1/blobs/{sum},
// from netexec or a stub) checks it against its name, keeps it, and
// pushes it to the other voters (PUT /v1/peer/blobs/{sum}); it answers
// only once a majority of the voters, itself counted, keep it. Only then
// does the client submit the job naming it (or the stub commit its
// OutputsKept), so a committed entry never names a blob that one
// server's loss could take away. A server asked for a blob it lacks (a
// stub starting the job, `netmgr fetch`) fetches it from a peer, checks
// it and keeps it. Blobs the live state no longer names are removed by
// each server's sweeper once they are older than blobGrace, so an upload
// whose Submit is still on its way is not taken. See DESIGN.md "Files in
// and out".

// blobsDir is the blob store's directory in a server's data dir.
const blobsDir = "blobs"

// blobGrace is how long an unreferenced blob is kept: longer than an
// upload and its Submit take.
const blobGrace = 10 * time.Minute

// blobSweepEvery is how often a server sweeps its blob store.
const blobSweepEvery = time.Minute

// blobPushTimeout bounds one push of a blob to one peer.
const blobPushTimeout = 60 * time.Second

// errBlobQuorum means fewer than a majority of the servers keep a blob.
var errBlobQuorum = errors.New("a majority of the servers did not keep the files")

// openBlobs opens the blob store in the data dir, or in a temporary
// directory for a server that keeps its Raft state in memory (tests).
func (s *Server) openBlobs() error {
	dir := filepath.Join(s.cfg.DataDir, blobsDir)
	if s.cfg.DataDir == "" {
		tmp, err := os.MkdirTemp("", "netmgr-blobs-")
		if err != nil {
			return fmt.Errorf("blob store: %w", err)
		}
		dir, s.blobsTemp = tmp, tmp
	}
	st, err := blobstore.Open(dir)
	if err != nil {
		return err
	}
	s.blobs = st
	return nil
}

// maxCopySize is the limit on one job's copy_in archive and on one
// attempt's copy_out.
func (s *Server) maxCopySize() int64 {
	if s.cfg.MaxCopySize > 0 {
		return s.cfg.MaxCopySize
	}
	return files.DefaultMaxSize
}

// blobPeers returns the API addresses of the other voters, by name, and
// how many voters there are.
func (s *Server) blobPeers() (map[string]string, int) {
	voters := 0
	peers := make(map[string]string)
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return peers, 1
	}
	known := s.gossip.servers()
	for _, sv := range f.Configuration().Servers {
		if sv.Suffrage != raft.Voter {
			continue
		}
		voters++
		if string(sv.ID) == s.cfg.Name {
			continue
		}
		if m, ok := known[string(sv.ID)]; ok && m.HTTP != "" {
			peers[string(sv.ID)] = m.HTTP
		} else {
			peers[string(sv.ID)] = "" // a voter gossip does not know now
		}
	}
	return peers, max(voters, 1)
}

// replicateBlob keeps data (the blob sum) here and pushes it to the other
// voters, and returns once a majority keep it, or fails saying which did
// not and why. Data that is not the blob sum is refused before anything
// is written or sent. This server's own write and sync go on beside the
// pushes, and the answer waits for it too (unless it failed), so that
// the entry the caller commits next finds the blob here and does not
// fetch it back. Pushes still running at the answer go on in the
// background, so that every server ends with a copy.
func (s *Server) replicateBlob(ctx context.Context, sum string, data []byte) (client.BlobResponse, error) {
	if err := files.Verify(sum, data); err != nil {
		return client.BlobResponse{}, fmt.Errorf("keep files: %w", err)
	}
	peers, voters := s.blobPeers()
	need := voters/2 + 1
	resp := client.BlobResponse{Sum: sum, Size: int64(len(data)), Servers: voters}
	type ack struct {
		name  string
		local bool
		err   error
	}
	acks := make(chan ack, len(peers)+1)
	go func() { acks <- ack{s.cfg.Name + " (this server)", true, s.blobs.PutVerified(sum, data)} }()
	for name, addr := range peers {
		go func() { acks <- ack{name, false, s.pushBlob(s.ctx, addr, sum, data)} }()
	}
	var failed []string
	localDone := false
	for range len(peers) + 1 {
		select {
		case a := <-acks:
			localDone = localDone || a.local
			if a.err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", a.name, a.err))
			} else {
				resp.Holders++
			}
			if resp.Holders >= need && localDone {
				return resp, nil // the others finish in the background
			}
		case <-ctx.Done():
			return resp, fmt.Errorf("keep files %.12s: %w", sum, ctx.Err())
		}
	}
	sort.Strings(failed)
	return resp, fmt.Errorf("keep files %.12s: %w: %d of %d keep them, %d needed (%s)", sum, errBlobQuorum,
		resp.Holders, voters, need, strings.Join(failed, "; "))
}

// pushBlob sends a blob to the peer at addr.
func (s *Server) pushBlob(ctx context.Context, addr, sum string, data []byte) error {
	if addr == "" {
		return errors.New("not in the gossip pool now")
	}
	ctx, cancel := context.WithTimeout(ctx, blobPushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.scheme()+addr+"/v1/peer/blobs/"+sum, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set(client.BlobHeaderSum, sum)
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// blob returns the blob sum from this server's store or, when it lacks
// it, from the first peer that has it, which it then keeps too.
func (s *Server) blob(ctx context.Context, sum string) ([]byte, error) {
	data, err := s.blobs.Get(sum)
	if err == nil || !errors.Is(err, blobstore.ErrNotFound) {
		return data, err
	}
	peers, _ := s.blobPeers()
	names := make([]string, 0, len(peers))
	for n := range peers {
		names = append(names, n)
	}
	slices.Sort(names)
	var tried []string
	for _, name := range names {
		data, err := s.fetchBlob(ctx, peers[name], sum)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if err := s.blobs.Put(sum, data); err != nil {
			s.log.Warn("keep a blob fetched from a peer", "blob", sum, "peer", name, "err", err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("blob %.12s: %w here, nor at the other servers (%s)", sum, blobstore.ErrNotFound, strings.Join(tried, "; "))
}

// fetchBlob reads a blob from the peer at addr's own store and checks it.
func (s *Server) fetchBlob(ctx context.Context, addr, sum string) ([]byte, error) {
	if addr == "" {
		return nil, errors.New("not in the gossip pool now")
	}
	ctx, cancel := context.WithTimeout(ctx, blobPushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme()+addr+"/v1/peer/blobs/"+sum, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.maxCopySize()+1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	if err := files.Verify(sum, data); err != nil {
		return nil, err
	}
	return data, nil
}

// sweepBlobs removes, every blobSweepEvery, the blobs that the live state
// names no more and that are older than blobGrace.
func (s *Server) sweepBlobs() {
	t := time.NewTicker(blobSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.sweepBlobsOnce(time.Now().Add(-blobGrace))
		}
	}
}

// sweepBlobsOnce removes the unreferenced blobs last written before
// cutoff, and returns how many it removed.
func (s *Server) sweepBlobsOnce(cutoff time.Time) int {
	es, err := s.blobs.List()
	if err != nil {
		s.log.Warn("sweep blob store", "err", err)
		return 0
	}
	var live map[string]bool
	s.fsm.Read(func(v fsm.View) { live = v.Blobs() })
	n := 0
	for _, e := range es {
		if live[e.Sum] || e.ModTime.After(cutoff) {
			continue
		}
		if err := s.blobs.Remove(e.Sum); err != nil {
			s.log.Warn("sweep blob store", "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		s.log.Info("removed files no job names any more", "blobs", n)
	}
	return n
}

// blobBytes is the disk use of the blob store, for /metrics.
func (s *Server) blobBytes() (count int, bytes int64) {
	if s.blobs == nil {
		return 0, 0
	}
	es, _ := s.blobs.List()
	for _, e := range es {
		bytes += e.Size
	}
	return len(es), bytes
}
