package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/sockettest"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/stub"
)

// tlsGroup is a server group in this process with TLS on every link, its
// throw-away CA's files in dir.
type tlsGroup struct {
	dir     string
	files   map[pki.Identity]pki.Files
	servers []*server.Server
}

// newTLSGroup starts n servers (s0, s1, ...) with certificates of a new CA,
// Raft on the in-memory transport, and stops them when the test ends. The
// CA also issues stub certificates for machines.
func newTLSGroup(t *testing.T, n int, machines ...string) *tlsGroup {
	t.Helper()
	g := &tlsGroup{dir: t.TempDir()}
	var ids []pki.Identity
	for i := range n {
		ids = append(ids, pki.Identity{Role: pki.RoleServer, Name: fmt.Sprintf("s%d", i)})
	}
	for _, m := range machines {
		ids = append(ids, pki.Identity{Role: pki.RoleStub, Name: m})
	}
	var err error
	if g.files, err = pki.MakeCluster(filepath.Join(g.dir, "tls"), time.Hour, ids...); err != nil {
		t.Fatalf("make TLS material: %v", err)
	}
	var trans []*raft.InmemTransport
	for range n {
		_, tr := raft.NewInmemTransport("")
		trans = append(trans, tr)
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		cfg := server.Config{
			Name:            name,
			HTTPAddr:        "127.0.0.1:0",
			GossipAddr:      "127.0.0.1:0",
			BootstrapExpect: n,
			OutageGrace:     server.DefaultOutageGrace,
			RaftTransport:   trans[i],
			InmemStore:      true,
			TuneRaft: func(c *raft.Config) {
				c.HeartbeatTimeout = 50 * time.Millisecond
				c.ElectionTimeout = 50 * time.Millisecond
				c.LeaderLeaseTimeout = 50 * time.Millisecond
				c.CommitTimeout = 5 * time.Millisecond
			},
			TLS: g.material(t, pki.RoleServer, name),
		}
		if i > 0 {
			cfg.Join = []string{g.servers[0].GossipAddr()}
		}
		s, err := server.New(cfg)
		if err != nil {
			t.Fatalf("start server %d: %v", i, err)
		}
		g.servers = append(g.servers, s)
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return g
}

// material loads the CA and the certificate of role name.
func (g *tlsGroup) material(t *testing.T, role pki.Role, name string) *pki.Material {
	t.Helper()
	m, err := pki.Load(g.files[pki.Identity{Role: role, Name: name}])
	if err != nil {
		t.Fatalf("load %s %s material: %v", role, name, err)
	}
	return m
}

// leader waits for exactly one leader that serves consistent reads, and
// for every follower to redirect them to it, and returns it. A leader
// that has just won answers 503 until it has applied its term's first
// entry, and a follower until gossip has told it the leader's address.
func (g *tlsGroup) leader(t *testing.T) (leader *server.Server, followers []*server.Server) {
	t.Helper()
	testwait.For(t, 15*time.Second, "one leader", func() bool {
		leader, followers = nil, nil
		for _, s := range g.servers {
			switch {
			case !s.IsLeader():
				followers = append(followers, s)
			case leader != nil:
				return false
			default:
				leader = s
			}
		}
		return leader != nil
	})
	// Ask as machine m1's stub vouching for a user, as the user socket
	// does: the leader's answer and the followers' redirects are those of
	// a group that serves.
	m := g.material(t, pki.RoleStub, "m1")
	hc := &http.Client{
		Timeout:       5 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: m.ClientConfig(pki.RoleServer)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer hc.CloseIdleConnections()
	answers := func(s *server.Server, want func(*http.Response) bool) bool {
		req, err := http.NewRequest(http.MethodGet, "https://"+s.HTTPAddr()+"/v1/jobs", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(client.VouchedUserHeader, "nobody")
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return want(resp)
	}
	testwait.For(t, 15*time.Second, "the group to serve consistent reads", func() bool {
		if !answers(leader, func(r *http.Response) bool { return r.StatusCode == http.StatusOK }) {
			return false
		}
		for _, f := range followers {
			redirected := func(r *http.Response) bool {
				return r.StatusCode == http.StatusTemporaryRedirect && strings.Contains(r.Header.Get("Location"), leader.HTTPAddr())
			}
			if !answers(f, redirected) {
				return false
			}
		}
		return true
	})
	return leader, followers
}

// socketStubOf starts the stub of machine with its certificate and a user
// socket, open to every local user; gossip joins the group unless servers
// are given, which are then the only ones it knows.
func (g *tlsGroup) socketStubOf(t *testing.T, machine string, servers ...string) (*stub.Stub, string) {
	t.Helper()
	dir := filepath.Join(g.dir, machine)
	cfg := stub.Config{
		Name:     machine,
		DataDir:  filepath.Join(dir, "data"),
		ExecDir:  filepath.Join(dir, "exec"),
		HTTPAddr: "127.0.0.1:0",
		Socket:   filepath.Join(dir, "run", "stub.sock"),
		TLS:      g.material(t, pki.RoleStub, machine),
		Servers:  servers,
	}
	if len(servers) == 0 {
		cfg.GossipAddr = "127.0.0.1:0"
		cfg.Join = []string{g.servers[0].GossipAddr()}
	}
	if err := os.MkdirAll(cfg.ExecDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Jobs run as their owners, who must reach the exec dir; the users
	// must reach the socket.
	sockettest.OpenToAll(t, cfg.ExecDir)
	s := startStub(t, cfg)
	sockettest.OpenToAll(t, filepath.Dir(cfg.Socket))
	return s, cfg.Socket
}

// startStub starts a stub of cfg and stops it at cleanup.
func startStub(t *testing.T, cfg stub.Config) *stub.Stub {
	t.Helper()
	s, err := stub.New(cfg)
	if err != nil {
		t.Fatalf("start stub %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("stop stub %s: %v", cfg.Name, err)
		}
	})
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A job submitted through a TLS stub's user socket is the caller's and
// runs as the caller's uid, whatever the caller claims in headers. Root
// is refused unless the database allows root jobs (this one does not).
// As root, the test calls as "nobody" from a process of that uid; as any
// other user, as itself.
func TestUserSocketTLSJobRunsAsTheCaller(t *testing.T) {
	g := newTLSGroup(t, 3, "m1")
	g.leader(t)
	_, sock := g.socketStubOf(t, "m1")
	mine, err := client.New(nil, client.WithUnixSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 15*time.Second, "m1 up", func() bool {
		ms, err := mine.Machines(testCtx(t))
		return err == nil && len(ms) == 1 && ms[0].State == client.MachineUp
	})

	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(out, 0o777); err != nil {
		t.Fatal(err)
	}
	sockettest.OpenToAll(t, out)
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	spec := client.JobSpec{
		Binaries: map[string]string{client.AnyKey: "/bin/sh"},
		Args:     []string{"-c", "id -u > " + out + "/uid"},
		Min:      1,
	}
	caller, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var id uint64
	if os.Geteuid() == 0 {
		_, err := mine.Submit(testCtx(t), client.SubmitRequest{Spec: spec})
		if !strings.Contains(fmt.Sprint(err), "does not allow root jobs") {
			t.Fatalf("root's submit through the socket: %v; want a refusal saying the database does not allow root jobs", err)
		}
		if caller, err = user.Lookup("nobody"); err != nil {
			t.Skipf("no user nobody to call the socket as: %v", err)
		}
		uid, _ := strconv.Atoi(caller.Uid)
		gid, _ := strconv.Atoi(caller.Gid)
		body, _ := json.Marshal(client.SubmitRequest{Spec: spec, IdempotencyKey: client.NewIdempotencyKey()})
		// The same idempotency key makes a retry after a 503 (an election
		// on a loaded machine) one submit, as the job commands retry.
		status, answer := sockettest.CallAs(t, uid, gid, sock, http.MethodPost, "/v1/jobs", string(body))
		for deadline := time.Now().Add(15 * time.Second); status == http.StatusServiceUnavailable && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond) // the client's retry pause, not a wait for an outcome
			status, answer = sockettest.CallAs(t, uid, gid, sock, http.MethodPost, "/v1/jobs", string(body))
		}
		var resp client.SubmitResponse
		if status != http.StatusOK || json.Unmarshal([]byte(answer), &resp) != nil {
			t.Fatalf("submit as %s: %d %s", caller.Username, status, answer)
		}
		id = resp.ID
	} else {
		resp, err := mine.Submit(testCtx(t), client.SubmitRequest{Spec: spec})
		if err != nil {
			t.Fatalf("submit through the socket: %v", err)
		}
		id = resp.ID
	}
	// The long poll goes through the socket too.
	job, err := mine.WaitJob(testCtx(t), strconv.FormatUint(id, 10), client.WaitDone)
	if err != nil {
		t.Fatalf("wait for the job: %v", err)
	}
	if job.Owner != caller.Username || job.State != client.JobDone {
		t.Fatalf("job %d: owner %q, state %s (%+v); want %s's, done", id, job.Owner, job.State, job.Instances, caller.Username)
	}
	data, err := os.ReadFile(filepath.Join(out, "uid"))
	if got := strings.TrimSpace(string(data)); err != nil || got != caller.Uid {
		t.Fatalf("the job ran as uid %q (%v); want %s's %s", got, err, caller.Username, caller.Uid)
	}
}

// A stub that knows only a dead address and a follower reaches the
// leader: the dead one is skipped, the follower's redirect of a
// consistent read is followed with the vouched user (the leader answers
// the user's read, which it refuses to anyone unnamed), and an event
// stream flows through the socket.
func TestUserSocketTLSFollowsTheLeader(t *testing.T) {
	g := newTLSGroup(t, 3, "m1")
	leader, followers := g.leader(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	_, sock := g.socketStubOf(t, "m1", deadAddr, followers[0].HTTPAddr())

	hc := sockettest.HTTP(sock)
	resp, err := hc.Get("http://netmgr-stub/v1/jobs")
	if err != nil {
		t.Fatalf("GET /v1/jobs through the socket: %v", err)
	}
	resp.Body.Close()
	// On a loaded machine leadership may move between finding the leader
	// and the call; the answer must come from whichever server leads then.
	from := resp.Header.Get(client.LeaderHeader)
	if resp.StatusCode != http.StatusOK || (from != leader.HTTPAddr() && from != currentLeaderAddr(t, g)) {
		t.Fatalf("GET /v1/jobs through the socket: %s from %q; want 200 from the leader %s", resp.Status, from, leader.HTTPAddr())
	}

	cl, err := client.New(nil, client.WithUnixSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errStop := errors.New("got one")
	err = cl.FollowEvents(ctx, 0, func(client.Event) error { return errStop })
	if !errors.Is(err, errStop) {
		t.Fatalf("follow events through the socket: %v; want an event", err)
	}
}

// currentLeaderAddr is the HTTP address of the group's leader now.
func currentLeaderAddr(t *testing.T, g *tlsGroup) string {
	t.Helper()
	l, _ := g.leader(t)
	return l.HTTPAddr()
}
