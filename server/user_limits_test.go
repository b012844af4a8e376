package server_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/files"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/servertest"
)

// The per-user limits (issue 34), each against three servers with TLS.

// certUser returns an HTTP client that proves user with a client
// certificate of c's CA, for requests whose raw answers a test reads.
func certUser(t *testing.T, c *servertest.Cluster, user string) *http.Client {
	t.Helper()
	m := c.Material(pki.Identity{Role: pki.RoleClient, Name: user})
	return &http.Client{
		Transport:     &http.Transport{TLSClientConfig: m.ClientConfig(pki.RoleServer)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// send makes one request to server i of c and returns the answer, its
// body read and closed.
func send(t *testing.T, hc *http.Client, c *servertest.Cluster, i int, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, "https://"+c.Servers[i].HTTPAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// waitReady waits until server leader of c answers consistent reads.
func waitReady(t *testing.T, c *servertest.Cluster, leader int) {
	t.Helper()
	if _, err := c.Client(leader).Machines(ctx(t)); err != nil { // retries while it catches up
		t.Fatalf("leader's first read: %v", err)
	}
}

// follower returns the index of a server of c that does not lead.
func follower(c *servertest.Cluster, leader int) int { return (leader + 1) % len(c.Servers) }

// TestUserRateLimit gives each user a burst of 5 requests and (as good as)
// no refill: the sixth is refused with 429, Retry-After and the flags
// that raise the limit, while another user is served; a write a follower
// forwards is counted there and not again at the leader; root on a pool
// machine is exempt.
func TestUserRateLimit(t *testing.T) {
	t.Parallel()
	const burst = 5
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) {
		cfg.UserRate, cfg.UserBurst = 0.001, burst
	})
	leader := c.WaitLeader()
	waitReady(t, c, leader)
	f := follower(c, leader)
	alice, bob := certUser(t, c, "alice"), certUser(t, c, "bob")

	for i := range burst {
		if resp, body := send(t, alice, c, f, "GET", "/v1/machines?stale"); resp.StatusCode != http.StatusOK {
			t.Fatalf("alice's request %d: %s %s, want 200", i+1, resp.Status, body)
		}
	}
	resp, body := send(t, alice, c, f, "GET", "/v1/machines?stale")
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || secs < 1 || !strings.Contains(body, "--user-rate") || !strings.Contains(body, "--user-burst") {
		t.Errorf("alice's request %d: %s, Retry-After %q, %s; want 429 with Retry-After and the flags", burst+1, resp.Status, resp.Header.Get("Retry-After"), body)
	}
	if resp, body := send(t, bob, c, f, "GET", "/v1/machines?stale"); resp.StatusCode != http.StatusOK {
		t.Errorf("bob, while alice is refused: %s %s, want 200", resp.Status, body)
	}

	// carol's writes to the follower are forwarded to the leader: counted
	// at the follower only, so the leader still grants her whole burst.
	// The counts are each server's, so a round in which leadership moved
	// (the in-memory group can elect under a loaded -race run, as a
	// clean-clone CI run saw) proves nothing: it is run again with a new
	// user and the servers' roles as they then are.
	for round := 1; !carolRound(t, c, fmt.Sprintf("carol%d", round), burst); round++ {
		if round == 3 {
			t.Fatalf("leadership moved during each of %d rounds of the forwarded-writes check", round)
		}
		t.Logf("leadership moved during round %d of the forwarded-writes check; again", round)
	}

	// Root on a pool machine (vouched by its stub) is exempt.
	root := c.ClientAs("root", f)
	for i := range 3 * burst {
		if _, err := root.Machines(ctx(t)); err != nil {
			t.Fatalf("root's request %d: %v, want no limit", i+1, err)
		}
	}
}

// carolRound checks, for a new user name, that writes a follower
// forwards are counted there and not at the leader. It returns false,
// checking nothing more, when leadership moved meanwhile.
func carolRound(t *testing.T, c *servertest.Cluster, name string, burst int) bool {
	t.Helper()
	leader := c.WaitLeader()
	f := follower(c, leader)
	carol := certUser(t, c, name)
	moved := func(resp *http.Response) bool {
		return resp.StatusCode == http.StatusTemporaryRedirect || c.WaitLeader() != leader
	}
	for i := range burst {
		resp, body := send(t, carol, c, f, "POST", "/v1/jobs/999/kill")
		if moved(resp) {
			return false
		}
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get(client.LeaderHeader) == "" {
			t.Fatalf("%s's forwarded kill %d: %s %s, want the leader's 404", name, i+1, resp.Status, body)
		}
	}
	if resp, _ := send(t, carol, c, f, "POST", "/v1/jobs/999/kill"); resp.StatusCode != http.StatusTooManyRequests {
		if moved(resp) {
			return false
		}
		t.Errorf("%s's kill %d at the follower: %s, want 429", name, burst+1, resp.Status)
	}
	for i := range burst {
		resp, body := send(t, carol, c, leader, "GET", "/v1/machines")
		if moved(resp) {
			return false
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s's request %d at the leader: %s %s, want 200 (the forwarded ones were counted at the follower)", name, i+1, resp.Status, body)
		}
	}
	return true
}

// TestUserRateLimitClientWaits: the client a command uses slows down
// past the limit instead of failing: 20 requests of a user with a burst
// of 5 and 10 a second all succeed, the ones past the bucket after the
// server's held 429 and its Retry-After.
func TestUserRateLimitClientWaits(t *testing.T) {
	t.Parallel()
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) {
		cfg.UserRate, cfg.UserBurst = 10, 5
	})
	leader := c.WaitLeader()
	waitReady(t, c, leader)
	alice := c.ClientAs("alice", leader)
	for i := range 20 {
		if _, err := alice.Machines(ctx(t)); err != nil {
			t.Fatalf("alice's request %d: %v, want it answered after waiting", i+1, err)
		}
	}
}

// TestUserStreamLimit allows each user 2 open streams at a server: a
// third (events or logs) is refused with 429 naming --user-streams, while
// another user opens one; once a stream closes, its user may open another.
//
// The streams are leader reads, so a round in which the in-memory group
// elected a new leader (a loaded -race clean-clone run saw a 503 "no
// leader") proves nothing: it is run again with new users at the leader
// as it then is.
func TestUserStreamLimit(t *testing.T) {
	t.Parallel()
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) { cfg.UserStreams = 2 })
	waitReady(t, c, c.WaitLeader())
	for round := 1; !streamRound(t, c, fmt.Sprintf("alice%d", round), fmt.Sprintf("bob%d", round)); round++ {
		if round == 3 {
			t.Fatalf("leadership moved during each of %d rounds of the stream-limit check", round)
		}
		t.Logf("leadership moved during round %d of the stream-limit check; again", round)
	}
}

// streamRound runs TestUserStreamLimit's checks for two new user names
// at the current leader. It returns false, checking nothing more, when
// leadership moved meanwhile.
func streamRound(t *testing.T, c *servertest.Cluster, aliceName, bobName string) bool {
	t.Helper()
	leader := c.WaitLeader()
	alice, bob := certUser(t, c, aliceName), certUser(t, c, bobName)
	moved := func(resp *http.Response) bool {
		return resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTemporaryRedirect || c.WaitLeader() != leader
	}
	open := func(hc *http.Client, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx(t), "GET", "https://"+c.Servers[leader].HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	first := open(alice, "/v1/events?follow=1")
	second := open(alice, "/v1/events?follow=1")
	if moved(first) || moved(second) {
		return false
	}
	if first.StatusCode != http.StatusOK || second.StatusCode != http.StatusOK {
		t.Fatalf("%s's streams: %s, %s; want 200", aliceName, first.Status, second.Status)
	}
	// A read that does not stream is not counted.
	if resp, body := send(t, alice, c, leader, "GET", "/v1/events"); resp.StatusCode != http.StatusOK {
		if moved(resp) {
			return false
		}
		t.Errorf("%s's events without follow: %s %s, want 200", aliceName, resp.Status, body)
	}
	for _, path := range []string{"/v1/events?follow=1", "/v1/jobs/1/logs", "/v1/jobs/1/session?instance=0"} {
		resp, body := send(t, alice, c, leader, "GET", path)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" || !strings.Contains(body, "--user-streams") {
			if moved(resp) {
				return false
			}
			t.Errorf("%s's third stream %s: %s %s; want 429 naming --user-streams, no Retry-After", aliceName, path, resp.Status, body)
		}
	}
	if b := open(bob, "/v1/events?follow=1"); b.StatusCode != http.StatusOK {
		if moved(b) {
			return false
		}
		t.Errorf("%s's stream: %s, want 200", bobName, b.Status)
	}
	first.Body.Close()
	testwait.For(t, 10*time.Second, aliceName+"'s stream to close at the server", func() bool {
		resp := open(alice, "/v1/events?follow=1")
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK || c.WaitLeader() != leader
	})
	return c.WaitLeader() == leader
}

// TestUserBlobQuota gives each user 1 MiB of blob store: an upload past
// it is refused with 413 naming --user-blob-quota and kept by no server,
// another user's is kept, and a submit is checked again on the leader,
// which counts the copy_in of alice's live jobs and what she uploaded to
// it, whichever server took the upload.
//
// Which server holds which upload decides the answers, and the in-memory
// Raft's 50 ms elections can move the lead under load (a clean-clone run
// saw "jobs keep 600.0 KiB" when the lead had moved to the server holding
// b). So the server that takes b is chosen just before the submits, as
// one that neither leads nor holds a; the test stays out of the parallel
// ones to keep that window quiet.
func TestUserBlobQuota(t *testing.T) {
	c := servertest.NewClusterConfig(t, 3, func(_ int, cfg *server.Config) { cfg.UserBlobQuota = 1 << 20 })
	leader := c.WaitLeader()
	waitReady(t, c, leader)
	f1 := follower(c, leader)
	blob := func() []byte {
		data := make([]byte, 600<<10)
		_, _ = rand.Read(data)
		return data
	}
	a, b, other := blob(), blob(), blob()

	// alice keeps 600 KiB at one follower, and may not keep 600 more there.
	if _, err := c.ClientAs("alice", f1).PutBlob(ctx(t), a); err != nil {
		t.Fatalf("alice's first upload: %v", err)
	}
	_, err := c.ClientAs("alice", f1).PutBlob(ctx(t), b)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusRequestEntityTooLarge || !strings.Contains(err.Error(), "--user-blob-quota") {
		t.Fatalf("alice's second upload: %v, want 413 naming --user-blob-quota", err)
	}
	// A body sent without a Content-Length is refused once read.
	req, err := http.NewRequestWithContext(ctx(t), "PUT", "https://"+c.Servers[f1].HTTPAddr()+"/v1/blobs/"+files.Sum(b), io.MultiReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := certUser(t, c, "alice").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("alice's chunked upload: %s, want 413", resp.Status)
	}
	for i, s := range c.Servers {
		if s.HasBlob(files.Sum(b)) {
			t.Errorf("server %d keeps the refused files", i)
		}
	}
	if _, err := c.ClientAs("bob", f1).PutBlob(ctx(t), other); err != nil {
		t.Errorf("bob's upload while alice is refused: %v", err)
	}
	// The same files again count once.
	if _, err := c.ClientAs("alice", f1).PutBlob(ctx(t), a); err != nil {
		t.Errorf("alice's upload of the same files again: %v", err)
	}

	// A server that neither leads nor has seen a takes b; the leader has
	// not seen b. A job naming a is within the quota; one naming b is
	// not, once a's job holds its 600 KiB.
	leader = c.WaitLeader()
	f2 := follower(c, leader)
	if f2 == f1 {
		f2 = follower(c, f2)
	}
	if _, err := c.ClientAs("alice", f2).PutBlob(ctx(t), b); err != nil {
		t.Fatalf("alice's upload to another server: %v", err)
	}
	cl := c.ClientAs("alice", leader)
	spec := shSpec("true", 1)
	spec.CopyIn, spec.CopyInBlob, spec.CopyInSize = []string{"a"}, files.Sum(a), int64(len(a))
	if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec}); err != nil {
		t.Fatalf("submit with a: %v", err)
	}
	spec.CopyIn, spec.CopyInBlob, spec.CopyInSize = []string{"b"}, files.Sum(b), int64(len(b))
	_, err = cl.Submit(ctx(t), client.SubmitRequest{Spec: spec})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusRequestEntityTooLarge || !strings.Contains(err.Error(), "--user-blob-quota") {
		t.Errorf("submit with b: %v, want 413 naming --user-blob-quota", err)
	}
	// Another job with a adds nothing.
	spec.CopyIn, spec.CopyInBlob, spec.CopyInSize = []string{"a"}, files.Sum(a), int64(len(a))
	if _, err := cl.Submit(ctx(t), client.SubmitRequest{Spec: spec}); err != nil {
		t.Errorf("a second job with a: %v", err)
	}
}
