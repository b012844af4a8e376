package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/servertest"
)

// attackDatabase is the database the attacks run against: it declares
// machine ghost, which no real stub runs, and allows root jobs (the test
// runs as root on what is, for the cluster, a pool machine).
const attackDatabase = "allow_root_jobs\nmachine ghost = {nprocs=1}\n"

// attack is the cluster under attack and what every attack checks
// against: the job it must not disturb.
type attack struct {
	c    *servertest.ProcCluster
	root *client.Client // the test's user on a pool machine: an admin when that is root
	dir  string
	me   string // the test's OS user, who owns the victim

	victim  uint64 // a job of the test's user, running on stub2
	attempt uint64 // its instance 0's attempt
}

// TestAttacks runs every attack of issue 15's list against one TLS
// cluster of real processes (3 servers, 2 stubs) and checks, for each,
// that it failed, that the system noticed (a refusal counted in
// netmgr_requests_denied_total or logged), and that nothing changed (the
// victim job runs on, the database and the Raft configuration are as
// they were, no forged command ran).
//
// The rest of the list is in TestIdentityEndToEnd, on its own cluster:
// an ordinary user killing another's job (user B's `netmgr kill` of
// user A's job), plaintext HTTP to a server's and a stub's API, a Start
// straight to a stub with a client certificate or with none, and a
// forged user header over a client certificate or a bad token.
func TestAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs a cluster")
	}
	began := time.Now()
	dir := t.TempDir()
	c, root := procCluster(t, dir, 3, 2)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	a := &attack{c: c, root: root, dir: dir, me: me.Username}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := root.LoadDatabase(ctx, client.DatabaseText{Filename: "attacks.db", Text: attackDatabase}); err != nil {
		t.Fatalf("load the attacks' database: %v", err)
	}
	sub, err := root.Submit(ctx, client.SubmitRequest{Spec: client.JobSpec{
		Name: "victim", Binaries: map[string]string{client.AnyKey: "/bin/sleep"}, Args: []string{"300"},
		Machines: []string{c.Stubs[1].Name},
	}})
	if err != nil {
		t.Fatalf("submit the victim job: %v", err)
	}
	a.victim = sub.ID
	t.Cleanup(func() {
		_, _ = root.Kill(context.Background(), a.ref(), client.KillRequest{Signal: "KILL"})
	})
	job, err := root.WaitJob(ctx, a.ref(), client.WaitStarted)
	if err != nil {
		t.Fatalf("wait for the victim job to start: %v", err)
	}
	if job.State != client.JobRunning || job.Instances[0].Machine != c.Stubs[1].Name {
		t.Fatalf("victim job %d: %s on %q, want running on %s", job.ID, job.State, job.Instances[0].Machine, c.Stubs[1].Name)
	}
	a.attempt = job.Instances[0].Attempt
	t.Logf("cluster up and victim job %d running after %v", a.victim, time.Since(began).Round(time.Millisecond))

	t.Run("forged identity", a.forgedIdentity)
	t.Run("direct stub start", a.directStubStart)
	t.Run("forged CHILD_TERM", a.forgedChildTerm)
	t.Run("plaintext to the raft port", a.plaintextRaft)
	t.Run("expired and revoked tokens", a.deadTokens)
	t.Run("root job with a token", a.rootJobWithToken)
	t.Run("rogue stub claiming a machine", a.rogueStub)
	t.Run("rogue servers", a.rogueServers)
	t.Run("root job where the database forbids it", a.rootJobForbidden)
	t.Logf("all attacks done after %v", time.Since(began).Round(time.Millisecond))
}

// ref is the victim's job reference.
func (a *attack) ref() string { return strconv.FormatUint(a.victim, 10) }

// intact fails the test unless the victim job still runs, as the test's
// user's, on stub2, in the attempt it started with.
func (a *attack) intact(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	job, err := a.root.Job(ctx, a.ref())
	if err != nil {
		t.Fatalf("victim job: %v", err)
	}
	in := job.Instances[0]
	if job.State != client.JobRunning || job.Owner != a.me || in.Machine != a.c.Stubs[1].Name || in.Attempt != a.attempt {
		t.Fatalf("victim job %d after the attack: %s, %s's, attempt %d on %q; want running, %s's, attempt %d on %s",
			a.victim, job.State, job.Owner, in.Attempt, in.Machine, a.me, a.attempt, a.c.Stubs[1].Name)
	}
}

// leader returns the server that leads now.
func (a *attack) leader(t *testing.T) *servertest.Proc {
	t.Helper()
	if err := a.c.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	i, _ := a.c.Leader()
	if i < 0 {
		t.Fatal("no leader")
	}
	return a.c.Servers[i]
}

// noCert is an HTTP client that trusts the cluster's CA and shows no
// certificate, as a laptop with a token does.
func (a *attack) noCert(t *testing.T) *http.Client {
	t.Helper()
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: caPool(t, a.c)},
	}}
}

// token issues a token for user lasting ttl with `netmgr token create`,
// run as the test's user on stub1 (its socket): root there administers
// the pool.
func (a *attack) token(t *testing.T, user, ttl string) string {
	t.Helper()
	code, out := runNetmgr(t, a.c.Env(), "token", "create", "--user", user, "--ttl", ttl, "--quiet")
	if code != 0 {
		t.Fatalf("netmgr token create --user %s --ttl %s: exit %d\n%s", user, ttl, code, out)
	}
	tok := tokenPattern.FindString(out)
	if tok == "" {
		t.Fatalf("netmgr token create printed no token:\n%s", out)
	}
	return tok
}

// tokenEnv is the environment of a client outside the pool holding tok:
// the servers' addresses, the CA, the token, no socket.
func (a *attack) tokenEnv(tok string) []string {
	return []string{"NETMGR_ADDR=" + a.c.Addr(), "NETMGR_CACERT=" + a.c.CAFile(), "NETMGR_TOKEN=" + tok}
}

// forgedIdentity: the headers that once named the user name root, on a
// request whose token is an ordinary user's; it acts as that user and an
// admin's request is refused. With no credentials at all, a request is
// refused before anything else.
func (a *attack) forgedIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: issuing a token takes an admin, root on a pool machine; the test is not root")
	}
	c := a.c
	alice := a.token(t, "alice", "1h")
	leader := a.leader(t)
	hc := a.noCert(t)
	if code, body := call(t, hc, http.MethodGet, leader.URL()+"/v1/jobs", nil, map[string]string{"Authorization": "Bearer " + alice}); code != http.StatusOK {
		t.Fatalf("alice's token does not work at all: %d %s", code, body)
	}
	forged := map[string]string{
		"Authorization":                 "Bearer " + alice,
		client.UserHeader:               "root",
		client.VouchedUserHeader:        "root",
		client.ForwardedPrincipalHeader: `{"user":"root","machine":"` + c.Stubs[0].Name + `","via":"forged"}`,
	}
	before := denied(t, c, c.Servers, "not_permitted")
	code, body := call(t, hc, http.MethodPut, leader.URL()+"/v1/queues/evil", client.Queue{Name: "evil", Priority: 100}, forged)
	if code != http.StatusForbidden || !strings.Contains(body, "alice") {
		t.Errorf("queue create with alice's token claiming root: %d %s; want 403 naming alice", code, body)
	}
	t.Logf("queue create with alice's token claiming root: %d %s", code, body)
	code, body = call(t, hc, http.MethodPost, leader.URL()+"/v1/admin/database",
		client.DatabaseText{Text: "admin_id alice\n"}, forged)
	if code != http.StatusForbidden || !strings.Contains(body, "alice") {
		t.Errorf("database load with alice's token claiming root: %d %s; want 403 naming alice", code, body)
	}
	if got := denied(t, c, c.Servers, "not_permitted") - before; got != 2 {
		t.Errorf("%s{reason=not_permitted} rose by %d, want 2", deniedMetric, got)
	}
	if len(logged(t, c.Servers, "request denied", "/v1/admin/database", "alice (token ", "reason=not_permitted")) == 0 {
		t.Error("no server logged the refused database load as alice's")
	}

	// No certificate, no token: only the header says root.
	before = denied(t, c, c.Servers, "no_credentials")
	code, body = call(t, hc, http.MethodPost, leader.URL()+"/v1/admin/database",
		client.DatabaseText{Text: "admin_id mallory\n"}, map[string]string{client.UserHeader: "root"})
	if code != http.StatusUnauthorized || !strings.Contains(body, "no client certificate or token") {
		t.Errorf("database load with no credentials, a header saying root: %d %s; want 401 no client certificate or token", code, body)
	}
	t.Logf("database load with no credentials: %d %s", code, body)
	if got := denied(t, c, c.Servers, "no_credentials") - before; got != 1 {
		t.Errorf("%s{reason=no_credentials} rose by %d, want 1", deniedMetric, got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	qs, err := a.root.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == "evil" {
			t.Errorf("queue evil exists: %+v", q)
		}
	}
	db, err := a.root.Database(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(db.Text, "admin_id") {
		t.Errorf("the database gained an admin:\n%s", db.Text)
	}
	a.intact(t)
}

// directStubStart: a Start straight to stub2, not from a server: with
// stub1's certificate, and with a client certificate that names a
// server. Neither runs anything.
func (a *attack) directStubStart(t *testing.T) {
	c := a.c
	stub2 := c.Stubs[1]
	marker := filepath.Join(a.dir, "direct-start")
	start := client.StartBatchRequest{Starts: []client.StartRequest{{
		JobID: 999999, JobName: "forged", Owner: "root", Instance: 0, Attempt: 1,
		Binary: "/bin/sh", Args: []string{"-c", "touch " + marker},
	}}}
	before := denied(t, c, []*servertest.Proc{stub2}, "wrong_role")
	for _, id := range []pki.Identity{
		{Role: pki.RoleStub, Name: c.Stubs[0].Name},
		{Role: pki.RoleClient, Name: c.Servers[0].Name},
	} {
		code, body := call(t, tlsHTTP(t, c, id), http.MethodPost, stub2.URL()+"/v1/starts", start, nil)
		if code != http.StatusForbidden {
			t.Errorf("Start to %s with the certificate of %s: %d %s; want 403", stub2.Name, id, code, body)
		}
		t.Logf("Start to %s with the certificate of %s: %d %s", stub2.Name, id, code, body)
	}
	if got := denied(t, c, []*servertest.Proc{stub2}, "wrong_role") - before; got != 2 {
		t.Errorf("%s's %s{reason=wrong_role} rose by %d, want 2", stub2.Name, deniedMetric, got)
	}
	if n := len(logged(t, []*servertest.Proc{stub2}, "request denied", "/v1/starts")); n < 2 {
		t.Errorf("%s logged %d refused Starts, want 2", stub2.Name, n)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a forged Start ran: %s exists (%v)", marker, err)
	}
	a.intact(t)
}

// forgedChildTerm: a CHILD_TERM for the victim's attempt on stub2, sent
// to the leader with stub1's certificate. Naming stub2 in the event is
// refused outright; naming stub1 (the certificate's machine) is fenced,
// as the attempt is not there; a client certificate is no stub's.
func (a *attack) forgedChildTerm(t *testing.T) {
	c := a.c
	term := client.ChildEvent{
		Kind: client.ChildTerm, JobID: a.victim, Instance: 0, Attempt: a.attempt,
		Machine: c.Stubs[1].Name, At: time.Now(), ExitCode: 0,
	}
	stub1 := tlsHTTP(t, c, pki.Identity{Role: pki.RoleStub, Name: c.Stubs[0].Name})
	leader := a.leader(t)

	before := denied(t, c, c.Servers, "wrong_machine")
	code, body := call(t, stub1, http.MethodPost, leader.URL()+"/v1/children", client.ChildEventBatch{Events: []client.ChildEvent{term}}, nil)
	if code != http.StatusForbidden || !strings.Contains(body, c.Stubs[0].Name) {
		t.Errorf("CHILD_TERM for %s with %s's certificate: %d %s; want 403 naming %s", c.Stubs[1].Name, c.Stubs[0].Name, code, body, c.Stubs[0].Name)
	}
	t.Logf("CHILD_TERM for %s with %s's certificate: %d %s", c.Stubs[1].Name, c.Stubs[0].Name, code, body)
	if got := denied(t, c, c.Servers, "wrong_machine") - before; got != 1 {
		t.Errorf("%s{reason=wrong_machine} rose by %d, want 1", deniedMetric, got)
	}
	if len(logged(t, c.Servers, "request denied", "/v1/children", "reason=wrong_machine")) == 0 {
		t.Error("no server logged the refused CHILD_TERM")
	}

	// The event names the certificate's own machine: accepted as a
	// report, fenced by the database, as the attempt runs elsewhere.
	term.Machine = c.Stubs[0].Name
	var resp client.ChildEventBatchResponse
	code, body = call(t, stub1, http.MethodPost, leader.URL()+"/v1/children", client.ChildEventBatch{Events: []client.ChildEvent{term}}, nil)
	if code != http.StatusOK {
		t.Errorf("CHILD_TERM for the victim on %s from %s: %d %s; want 200 with the event fenced", c.Stubs[0].Name, c.Stubs[0].Name, code, body)
	} else if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Results) != 1 || !(resp.Results[0].Stale || resp.Results[0].Error != "") {
		t.Errorf("CHILD_TERM for the victim on %s from %s: %s (%v); want the event fenced (stale)", c.Stubs[0].Name, c.Stubs[0].Name, body, err)
	}
	t.Logf("CHILD_TERM for the victim's attempt naming %s, from %s: %d %s", c.Stubs[0].Name, c.Stubs[0].Name, code, body)
	testwait.For(t, 10*time.Second, "the fenced event logged", func() bool {
		return len(logged(t, c.Servers, "fenced stale child event", "job="+a.ref(), "machine="+c.Stubs[0].Name)) > 0
	})

	// A client certificate that names the machine.
	before = denied(t, c, c.Servers, "wrong_role")
	term.Machine = c.Stubs[1].Name
	code, body = call(t, tlsHTTP(t, c, pki.Identity{Role: pki.RoleClient, Name: c.Stubs[1].Name}), http.MethodPost,
		leader.URL()+"/v1/children", client.ChildEventBatch{Events: []client.ChildEvent{term}}, nil)
	if code != http.StatusForbidden {
		t.Errorf("CHILD_TERM with a client certificate named %s: %d %s; want 403", c.Stubs[1].Name, code, body)
	}
	if got := denied(t, c, c.Servers, "wrong_role") - before; got != 1 {
		t.Errorf("%s{reason=wrong_role} rose by %d, want 1", deniedMetric, got)
	}
	a.intact(t)
}

// plaintextRaft: a Raft peer in the clear (hashicorp/raft's own TCP
// transport) asks the leader for its vote with a far higher term and
// a longer log, as a leadership transfer: granted, the leader would
// step down to that term. The TLS listener refuses it before Raft sees
// a byte. (Plaintext HTTP to a server's and a stub's API is in
// TestIdentityEndToEnd.)
func (a *attack) plaintextRaft(t *testing.T) {
	c := a.c
	leader := a.leader(t)
	li := slices.Index(c.Servers, leader)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	self, err := c.Self(ctx, li)
	if err != nil {
		t.Fatal(err)
	}
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 3*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	forgedTerm := self.Term + 1000
	req := &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("mallory"), Addr: []byte(trans.LocalAddr())},
		Term:      forgedTerm, LastLogIndex: self.LastIndex + 1000, LastLogTerm: forgedTerm, LeadershipTransfer: true,
	}
	before := denied(t, c, c.Servers, "rogue_server")
	var resp raft.RequestVoteResponse
	err = trans.RequestVote(raft.ServerID(leader.Name), raft.ServerAddress(leader.RaftAddr), req, &resp)
	if err == nil {
		t.Errorf("plaintext RequestVote to %s's raft port %s: answered %+v; want the connection refused", leader.Name, leader.RaftAddr, resp)
	}
	t.Logf("plaintext RequestVote to %s's raft port: %v", leader.Name, err)
	testwait.For(t, 10*time.Second, "the refused raft connection counted as rogue_server", func() bool {
		return denied(t, c, c.Servers, "rogue_server") > before
	})
	if len(logged(t, []*servertest.Proc{leader}, "refused raft connection")) == 0 {
		t.Errorf("%s did not log the refused raft connection", leader.Name)
	}
	after, err := c.Self(ctx, li)
	if err != nil {
		t.Fatal(err)
	}
	if after.Term >= forgedTerm {
		t.Errorf("%s is at term %d after the forged vote request of term %d", leader.Name, after.Term, forgedTerm)
	}
	a.intact(t)
}

// deadTokens: a token issued for 2 s is refused once it expired, saying
// so; a revoked token is refused on every server.
func (a *attack) deadTokens(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: issuing a token takes an admin, root on a pool machine; the test is not root")
	}
	c := a.c
	hc := a.noCert(t)
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	before := denied(t, c, c.Servers, "expired_token")
	short := a.token(t, "alice", "2s")
	leader := a.leader(t)
	var code int
	var body string
	testwait.For(t, 20*time.Second, "the 2s token to be refused", func() bool {
		code, body = call(t, hc, http.MethodGet, leader.URL()+"/v1/jobs", nil, bearer(short))
		return code != http.StatusOK
	})
	if code != http.StatusUnauthorized || !strings.Contains(body, "expired") {
		t.Errorf("request with a token past its 2s: %d %s; want 401 saying it expired", code, body)
	}
	exit, out := runNetmgr(t, a.tokenEnv(short), "status")
	if exit != 1 || !strings.Contains(out, "expired") {
		t.Errorf("netstatus with an expired token: exit %d\n%s\nwant exit 1 saying the token expired", exit, out)
	}
	t.Logf("netstatus with an expired token: exit %d: %s", exit, strings.TrimSpace(out))
	if got := denied(t, c, c.Servers, "expired_token") - before; got < 2 {
		t.Errorf("%s{reason=expired_token} rose by %d, want at least 2", deniedMetric, got)
	}

	long := a.token(t, "alice", "1h")
	id := tokenPattern.FindStringSubmatch(long)[1]
	for _, s := range c.Servers {
		testwait.For(t, 10*time.Second, "the token to work on "+s.Name, func() bool {
			code, _ := call(t, hc, http.MethodGet, s.URL()+"/v1/jobs", nil, bearer(long))
			return code == http.StatusOK
		})
	}
	if exit, out := runNetmgr(t, c.Env(), "token", "revoke", id); exit != 0 {
		t.Fatalf("netmgr token revoke %s: exit %d\n%s", id, exit, out)
	}
	before = denied(t, c, c.Servers, "bad_token")
	for _, s := range c.Servers {
		testwait.For(t, 10*time.Second, "the revoked token refused by "+s.Name, func() bool {
			code, body = call(t, hc, http.MethodGet, s.URL()+"/v1/jobs", nil, bearer(long))
			return code != http.StatusOK
		})
		if code != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
			t.Errorf("request to %s with a revoked token: %d %s; want 401 saying unknown or revoked", s.Name, code, body)
		}
	}
	exit, out = runNetmgr(t, a.tokenEnv(long), "status")
	if exit != 1 || !strings.Contains(out, "revoked") {
		t.Errorf("netstatus with a revoked token: exit %d\n%s\nwant exit 1 saying the token is revoked", exit, out)
	}
	t.Logf("netstatus with a revoked token: exit %d: %s", exit, strings.TrimSpace(out))
	if got := denied(t, c, c.Servers, "bad_token") - before; got < 4 {
		t.Errorf("%s{reason=bad_token} rose by %d, want at least 4 (one per server and the CLI's)", deniedMetric, got)
	}
}

// rootJobWithToken: a token issued for the user root submits a job: a
// root job only comes from a pool machine. Nor is that token root of the
// pool.
func (a *attack) rootJobWithToken(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: issuing a token takes an admin, root on a pool machine; the test is not root")
	}
	c := a.c
	tok := a.token(t, "root", "1h")
	marker := filepath.Join(a.dir, "root-token-job")
	before := denied(t, c, c.Servers, "root_job")
	jobs := jobCount(t, a.root)
	exit, out := runNetmgr(t, a.tokenEnv(tok), "exec", "/bin/sh", "-c", "touch "+marker)
	if exit != 1 || !strings.Contains(out, "never with a token") {
		t.Errorf("netexec as root with a token: exit %d\n%s\nwant exit 1: root jobs only from a pool machine", exit, out)
	}
	t.Logf("netexec as root with a token: exit %d: %s", exit, strings.TrimSpace(out))
	if got := denied(t, c, c.Servers, "root_job") - before; got != 1 {
		t.Errorf("%s{reason=root_job} rose by %d, want 1", deniedMetric, got)
	}
	beforeAdmin := denied(t, c, c.Servers, "not_permitted")
	exit, out = runNetmgr(t, a.tokenEnv(tok), "admin", "queue", "add", "--priority", "100", "evil")
	if exit != 1 || !strings.Contains(out, "root (token ") {
		t.Errorf("netmgr admin queue add with a token for root: exit %d\n%s\nwant exit 1: root with a token is no admin", exit, out)
	}
	t.Logf("netmgr admin queue add with a token for root: exit %d: %s", exit, strings.TrimSpace(out))
	if got := denied(t, c, c.Servers, "not_permitted") - beforeAdmin; got != 1 {
		t.Errorf("%s{reason=not_permitted} rose by %d, want 1", deniedMetric, got)
	}
	if got := jobCount(t, a.root); got != jobs {
		t.Errorf("the refused root job left %d new jobs", got-jobs)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the root job ran: %s exists (%v)", marker, err)
	}
	a.intact(t)
}

// rogueStub: a stub process that calls itself ghost (a machine of the
// database no real stub runs) but holds stub1's certificate. The servers
// never take it for ghost: they will not fetch its facts (its
// certificate is not ghost's), so it never joins, and its lease
// renewals for ghost are refused. A job pinned to ghost never starts.
func (a *attack) rogueStub(t *testing.T) {
	c := a.c
	stub1 := c.Stubs[0]
	var join []string
	for _, s := range c.Servers {
		join = append(join, s.GossipAddr)
	}
	marker := filepath.Join(a.dir, "ghost-job")
	code, out := runNetmgr(t, c.Env(), "exec", "--machines", "ghost", "--name", "ghostjob", "/bin/sh", "-c", "touch "+marker)
	if code != 0 {
		t.Fatalf("netexec --machines ghost: exit %d\n%s", code, out)
	}
	m := regexp.MustCompile(`id (\d+) submitted`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("netexec names no job id:\n%s", out)
	}
	ghostJob := m[1]
	t.Cleanup(func() { _, _ = a.root.Kill(context.Background(), ghostJob, client.KillRequest{Signal: "KILL"}) })

	before := denied(t, c, c.Servers, "wrong_machine")
	gdir := filepath.Join(a.dir, "ghost")
	r := startRogue(t, a.dir, "ghost", "stub", "--name", "ghost",
		"--data-dir", filepath.Join(gdir, "data"), "--exec-dir", filepath.Join(gdir, "exec"), "--socket", "",
		"--http", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--join", strings.Join(join, ","),
		"--ca-file", stub1.TLS.CA, "--cert-file", stub1.TLS.Cert, "--key-file", stub1.TLS.Key,
		"--gossip-keyring", c.GossipKeyring(), "--min-free-disk", "0", "--min-free-inodes", "0")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	never := func() {
		ms, err := a.root.Machines(ctx)
		if err != nil {
			t.Fatalf("machines: %v", err)
		}
		for _, mc := range ms {
			if mc.Name == "ghost" && mc.State == client.MachineUp {
				t.Fatalf("the rogue stub made ghost up: %+v", mc)
			}
		}
		job, err := a.root.Job(ctx, ghostJob)
		if err != nil {
			t.Fatalf("job %s: %v", ghostJob, err)
		}
		if job.State != client.JobQueued || job.Instances[0].Machine != "" {
			t.Fatalf("the job pinned to ghost is %s, instance 0 on %q; want it queued, placed nowhere", job.State, job.Instances[0].Machine)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the job pinned to ghost ran: %s exists (%v)", marker, err)
		}
	}
	watch(t, 45*time.Second, "the servers to refuse ghost's facts 4 times and 5 of its lease renewals", func() (bool, string) {
		r.running(t)
		renewals := denied(t, c, c.Servers, "wrong_machine") - before
		facts := len(logged(t, c.Servers, "fetch stub facts failed", "machine=ghost"))
		return renewals >= 5 && facts >= 4, fmt.Sprintf("%d renewals refused, %d facts fetches failed", renewals, facts)
	}, never)
	if len(logged(t, c.Servers, "request denied", "/v1/lease", "reason=wrong_machine")) == 0 {
		t.Error("no server logged a refused lease renewal for ghost")
	}
	r.stop()
	ms, err := a.root.Machines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range ms {
		if mc.Name == stub1.Name && mc.State != client.MachineUp {
			t.Errorf("%s is %s after a rogue used its certificate, want up", stub1.Name, mc.State)
		}
	}
	a.intact(t)
}

// rogueServers: three would-be servers join the gossip pool, started as
// an attacker would (--bootstrap-expect 0, joining the servers): one
// with the gossip key and a stub's certificate, one with the gossip key
// and no certificate at all (--insecure), one with neither. None ever
// enters the Raft configuration; the first two are refused at their
// Raft address, the third never gets into gossip.
func (a *attack) rogueServers(t *testing.T) {
	c := a.c
	stub1 := c.Stubs[0].TLS
	var join []string
	for _, s := range c.Servers {
		join = append(join, s.GossipAddr)
	}
	before := denied(t, c, c.Servers, "rogue_server")
	start := func(name string, extra ...string) *rogue {
		args := append([]string{"server", "--name", name, "--data-dir", filepath.Join(a.dir, name),
			"--http", "127.0.0.1:0", "--raft", "127.0.0.1:0", "--gossip", "127.0.0.1:0",
			"--bootstrap-expect", "0", "--join", strings.Join(join, ",")}, extra...)
		return startRogue(t, a.dir, name, args...)
	}
	stubCert := start("rogue-stubcert", "--ca-file", stub1.CA, "--cert-file", stub1.Cert, "--key-file", stub1.Key,
		"--gossip-keyring", c.GossipKeyring())
	noCert := start("rogue-nocert", "--insecure", "--gossip-keyring", c.GossipKeyring())
	noKey := start("rogue-nokey", "--insecure")

	want := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		want[i] = s.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	never := func() {
		ss, err := a.root.Servers(ctx)
		if err != nil {
			t.Fatalf("servers: %v", err)
		}
		var names []string
		for _, s := range ss {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Fatalf("the Raft configuration is %v, want %v", names, want)
		}
	}
	watch(t, 45*time.Second, "the servers to refuse each rogue three times", func() (bool, string) {
		for _, r := range []*rogue{stubCert, noCert, noKey} {
			r.running(t)
		}
		refused := denied(t, c, c.Servers, "rogue_server") - before
		sc := len(logged(t, c.Servers, "refused to add server rogue-stubcert", "no server certificate"))
		nc := len(logged(t, c.Servers, "refused to add server rogue-nocert", "no server certificate"))
		nk := len(noKey.lines(t, "gossip join refused"))
		return refused >= 6 && sc > 0 && nc > 0 && nk >= 3,
			fmt.Sprintf("%d refusals counted; refusals logged: rogue-stubcert %d, rogue-nocert %d; rogue-nokey's joins refused %d",
				refused, sc, nc, nk)
	}, never)
	if len(logged(t, c.Servers, "gossip refused")) == 0 {
		t.Error("no server logged gossip refused from rogue-nokey, which has no gossip key")
	}
	// rogue-nokey's own view: nobody let it in.
	api := regexp.MustCompile(`server rogue-nokey api (http://\S+)`)
	var url string
	testwait.For(t, 10*time.Second, "rogue-nokey to print its API", func() bool {
		for _, l := range noKey.lines(t, "rogue-nokey api") {
			if m := api.FindStringSubmatch(l); m != nil {
				url = m[1]
			}
		}
		return url != ""
	})
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("rogue-nokey's metrics: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rogue-nokey's metrics: %s %s", resp.Status, data)
	}
	if !regexp.MustCompile(`(?m)^netmgr_server_gossip_members 1$`).Match(data) {
		t.Errorf("rogue-nokey sees more gossip members than itself:\n%s", grepLines(string(data), "gossip_members"))
	}
	for _, r := range []*rogue{stubCert, noCert, noKey} {
		r.stop()
	}
	a.intact(t)
}

// rootJobForbidden: root on a pool machine (through stub1's socket)
// submits a job once the database no longer allows root jobs: refused,
// saying how to allow them.
func (a *attack) rootJobForbidden(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: the socket vouches for the caller's uid, and this attack is uid 0's; the test is not root")
	}
	c := a.c
	db := filepath.Join(a.dir, "no-root-jobs.db")
	if err := os.WriteFile(db, []byte(strings.ReplaceAll(attackDatabase, "allow_root_jobs\n", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runNetmgr(t, c.Env(), "admin", "load", db); code != 0 {
		t.Fatalf("netmgr admin load %s as root over the socket: exit %d\n%s", db, code, out)
	}
	marker := filepath.Join(a.dir, "forbidden-root-job")
	before := denied(t, c, c.Servers, "root_job")
	jobs := jobCount(t, a.root)
	code, out := runNetmgr(t, c.Env(), "exec", "/bin/sh", "-c", "touch "+marker)
	if code != 1 || !strings.Contains(out, "allow_root_jobs") {
		t.Errorf("netexec as root over the socket without allow_root_jobs: exit %d\n%s\nwant exit 1 naming allow_root_jobs", code, out)
	}
	t.Logf("netexec as root over the socket without allow_root_jobs: exit %d: %s", code, strings.TrimSpace(out))
	if got := denied(t, c, c.Servers, "root_job") - before; got != 1 {
		t.Errorf("%s{reason=root_job} rose by %d, want 1", deniedMetric, got)
	}
	if got := jobCount(t, a.root); got != jobs {
		t.Errorf("the refused root job left %d new jobs", got-jobs)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the root job ran: %s exists (%v)", marker, err)
	}
	a.intact(t)
}
