package membership

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty/dutytest"
	"github.com/netmgr/netmgr/server/lease"
	"github.com/netmgr/netmgr/server/raftnode"
	"github.com/netmgr/netmgr/server/rejoin"
)

// stubAt answers GET /v1/facts with facts, counting the requests, and
// returns its address.
func stubAt(t *testing.T, facts client.Facts, asked *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(facts)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// config is a Config for tests: pool is the gossip pool, stubs are
// reached over plain HTTP, the rejoin joins nothing, and there is no
// Raft (tests that add voters set it).
func config(pool map[string]Member) Config {
	hc := &http.Client{Timeout: 5 * time.Second}
	stubClient := func(_, addr string) (*client.StubClient, error) {
		return client.NewStub(addr, client.WithHTTPClient(hc))
	}
	return Config{
		Pool:       func() map[string]Member { return pool },
		StubClient: stubClient,
		MachineFacts: func(f client.Facts) fsm.MachineFacts {
			return fsm.MachineFacts{Name: f.Name, Arch: f.Arch, CPUs: f.CPUs, Addr: f.HTTPAddr}
		},
		Rejoin: rejoin.Config{
			StubClient: stubClient,
			Join:       func([]string) (int, error) { return 0, errors.New("no gossip in this test") },
			Members:    func() int { return 1 },
		},
		StubJoins: promtext.NewCounterVec("stub_joins_total", "joins", []string{"facts"}),
	}
}

func stub(addr string) Member {
	return Member{Meta: client.NodeMeta{Role: client.RoleStub, HTTP: addr}, Alive: true}
}

// machine returns the database's copy of machine name.
func machine(h *dutytest.Handle, name string) (m fsm.Machine, ok bool) {
	h.Read(func(v fsm.View) {
		var p *fsm.Machine
		if p, ok = v.Machine(name); ok {
			m = *p
		}
	})
	return m, ok
}

// joinMachine puts machine name, up at addr, in the database.
func joinMachine(t *testing.T, h *dutytest.Handle, name, addr string) {
	t.Helper()
	h.MustApply(t, fsm.StubJoinType, fsm.StubJoin{At: time.Now().UTC(),
		Machine: fsm.MachineFacts{Name: name, Arch: "amd64", CPUs: 1, Addr: addr}})
}

// A live stub the database lacks joins with the facts fetched from it;
// one whose renewals carried its facts joins with those, and its stub is
// not asked. Each join counts by where the facts came from, and touches
// the machine's lease.
func TestMembershipJoinsLiveStubs(t *testing.T) {
	var asked atomic.Int32
	fetched := stubAt(t, client.Facts{Arch: "amd64", CPUs: 4}, &asked)
	renewed := stubAt(t, client.Facts{Arch: "arm64", CPUs: 2}, &asked)
	h := dutytest.New()
	cfg := config(map[string]Member{"a": stub(fetched), "b": stub(renewed)})
	cfg.Leases = lease.NewTable(time.Now().Add(-time.Hour), nil)
	cfg.RenewalFacts = func(_ context.Context, machine, addr string) (client.Facts, bool) {
		if machine == "b" && addr == renewed {
			return client.Facts{Arch: "arm64", CPUs: 8}, true
		}
		return client.Facts{}, false
	}
	m := New(h, cfg)
	m.Reconcile(context.Background())
	m.Wait()
	for name, want := range map[string]fsm.MachineFacts{
		"a": {Name: "a", Arch: "amd64", CPUs: 4, Addr: fetched},
		"b": {Name: "b", Arch: "arm64", CPUs: 8, Addr: renewed},
	} {
		mc, ok := machine(h, name)
		if !ok || mc.State != fsm.MachineUp || mc.Arch != want.Arch || mc.CPUs != want.CPUs || mc.Addr != want.Addr {
			t.Errorf("machine %s = %+v (found %v), want up with %+v", name, mc.MachineFacts, ok, want)
		}
		if silence := cfg.Leases.Silence(name, time.Now()); silence > time.Minute {
			t.Errorf("join of %s touched no lease: silent for %v", name, silence)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("stubs asked %d times, want once (b's facts came with its renewals)", n)
	}
	for source, want := range map[string]float64{"fetched": 1, "renewal": 1} {
		if got := cfg.StubJoins.WithLabelValues(source).Value(); got != want {
			t.Errorf("stub_joins_total{facts=%q} = %v, want %v", source, got, want)
		}
	}
	// Up at the address gossip gives: nothing more to join.
	before := h.Index()
	m.Reconcile(context.Background())
	m.Wait()
	if h.Index() != before {
		t.Errorf("a second pass committed %d commands, want none", h.Index()-before)
	}
}

// A stub whose facts cannot be had does not join, and a failed commit
// is logged, not retried in the pass: the next pass tries again.
func TestMembershipJoinFailsWithoutFacts(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "not now", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	h := dutytest.New()
	m := New(h, config(map[string]Member{"a": stub(addr)}))
	for range 2 {
		m.Reconcile(context.Background())
		m.Wait()
	}
	if _, ok := machine(h, "a"); ok {
		t.Errorf("machine a joined without facts")
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("stub asked %d times, want once per pass (2)", n)
	}
}

// An up machine leaves when gossip reports it gone or failed; one gossip
// has never mentioned leaves only after absentGrace of this leadership.
func TestMembershipLeaves(t *testing.T) {
	h := dutytest.New()
	for _, name := range []string{"left", "failed", "absent", "alive"} {
		joinMachine(t, h, name, name+":1")
	}
	pool := map[string]Member{
		"left":   {Meta: client.NodeMeta{Role: client.RoleStub, HTTP: "left:1"}, Left: true},
		"failed": {Meta: client.NodeMeta{Role: client.RoleStub, HTTP: "failed:1"}},
		"alive":  stub("alive:1"),
	}
	m := New(h, config(pool))
	m.Reconcile(context.Background())
	m.Wait()
	want := map[string]string{"left": fsm.MachineDown, "failed": fsm.MachineDown, "absent": fsm.MachineUp, "alive": fsm.MachineUp}
	for name, state := range want {
		if mc, _ := machine(h, name); mc.State != state {
			t.Errorf("within the grace, machine %s is %v, want %v", name, mc.State, state)
		}
	}
	m.since = time.Now().Add(-absentGrace - time.Second)
	m.Reconcile(context.Background())
	m.Wait()
	want["absent"] = fsm.MachineDown
	for name, state := range want {
		if mc, _ := machine(h, name); mc.State != state {
			t.Errorf("past the grace, machine %s is %v, want %v", name, mc.State, state)
		}
	}
}

// lookAtMachines finds unseen every machine with an address that gossip
// does not hold alive as a stub.
func TestMembershipUnseenMachines(t *testing.T) {
	h := dutytest.New()
	for _, name := range []string{"alive", "failed", "absent"} {
		joinMachine(t, h, name, name+":1")
	}
	pool := map[string]Member{
		"alive":  stub("alive:1"),
		"failed": {Meta: client.NodeMeta{Role: client.RoleStub, HTTP: "failed:1"}},
	}
	var got map[string]string
	h.Read(func(v fsm.View) { got, _ = lookAtMachines(v, pool, false) })
	if len(got) != 2 || got["failed"] != "failed:1" || got["absent"] != "absent:1" {
		t.Errorf("unseen = %v, want failed and absent", got)
	}
}

// server is a live server member of the pool at Raft address addr.
func server(addr string) Member {
	return Member{Meta: client.NodeMeta{Role: client.RoleServer, Raft: addr}, Alive: true}
}

// voters returns the IDs of the Raft configuration's servers.
func voters(t *testing.T, r Raft) map[string]bool {
	t.Helper()
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatalf("raft configuration: %v", err)
	}
	out := make(map[string]bool)
	for _, s := range f.Configuration().Servers {
		out[string(s.ID)] = true
	}
	return out
}

// Without an admission check (Raft not over TLS), a live server outside
// the configuration is added as a voter; a server already in it, a dead
// one or one with no Raft address is not.
func TestMembershipAddsVoterAtOnce(t *testing.T) {
	h := dutytest.New().WithRaft(t)
	cfg := config(map[string]Member{
		"s1": server("ignored:1"),
		"s2": server("s2-addr"),
		"s3": {Meta: client.NodeMeta{Role: client.RoleServer, Raft: "s3-addr"}},
		"s4": server(""),
	})
	cfg.Raft = h.Raft()
	m := New(h, cfg)
	m.Reconcile(context.Background())
	m.Wait()
	got := voters(t, cfg.Raft)
	if !got["s1"] || !got["s2"] || got["s3"] || got["s4"] || len(got) != 2 {
		t.Errorf("configuration holds %v, want s1 and s2", got)
	}
}

// raftTLS serves TLS with the certificate of id from files at a loopback
// address, as a server's Raft port does, and returns the address.
func raftTLS(t *testing.T, files pki.Files) string {
	t.Helper()
	mat, err := pki.Load(files)
	if err != nil {
		t.Fatalf("load TLS material: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", mat.ServerConfig(true))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			})
		}
	})
	return ln.Addr().String()
}

// Over TLS, a server whose Raft address answers with its own server
// certificate becomes a voter, and one answering as another server is
// refused, counted and not checked again within raftnode.AdmitRetry.
func TestMembershipAdmitsProvedServersOnly(t *testing.T) {
	s1, s2, s3 := pki.Identity{Role: pki.RoleServer, Name: "s1"}, pki.Identity{Role: pki.RoleServer, Name: "s2"}, pki.Identity{Role: pki.RoleServer, Name: "s3"}
	files, err := pki.MakeCluster(t.TempDir(), time.Hour, s1, s2, s3)
	if err != nil {
		t.Fatalf("make cluster: %v", err)
	}
	self, err := pki.Load(files[s1])
	if err != nil {
		t.Fatalf("load TLS material: %v", err)
	}
	h := dutytest.New().WithRaft(t)
	cfg := config(map[string]Member{
		"s2":    server(raftTLS(t, files[s2])),
		"rogue": server(raftTLS(t, files[s3])), // a server's certificate, not its own
		"plain": server(listenPlain(t)),
	})
	cfg.Raft = h.Raft()
	record := raftnode.NewAdmission()
	var mu sync.Mutex
	refused := make(map[string]int)
	cfg.Admit = &Admit{
		Record: record,
		Verify: func(ctx context.Context, name, addr string) error {
			return raftnode.VerifyServer(ctx, self, name, addr)
		},
		Refuse: func(name, _ string, _ error) {
			record.Refuse(name, time.Now())
			mu.Lock()
			refused[name]++
			mu.Unlock()
		},
	}
	m := New(h, cfg)
	m.Reconcile(context.Background())
	m.Wait()
	got := voters(t, cfg.Raft)
	if !got["s2"] || got["rogue"] || got["plain"] {
		t.Errorf("configuration holds %v, want s2 and neither rogue nor plain", got)
	}
	m.Reconcile(context.Background()) // within AdmitRetry: no new check
	m.Wait()
	mu.Lock()
	defer mu.Unlock()
	if refused["rogue"] != 1 || refused["plain"] != 1 || len(refused) != 2 {
		t.Errorf("refusals %v, want rogue and plain once each", refused)
	}
	if n := record.Refused(); n != 2 {
		t.Errorf("admission counted %d refusals, want 2", n)
	}
}

// listenPlain accepts TCP at a loopback address and closes every
// connection at once: no TLS there.
func listenPlain(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// A pass that sees the pool and the machines as the last full pass that
// started nothing repeats its outcome without copying the pool; a change
// of either, a join that ended (failed ones included) and the end of the
// absent grace make the next pass look again.
func TestMembershipRepeatsAnUnchangedPass(t *testing.T) {
	var asked, refused atomic.Int32
	good := stubAt(t, client.Facts{Arch: "amd64", CPUs: 4}, &asked)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		http.Error(w, "not today", http.StatusServiceUnavailable)
	}))
	t.Cleanup(bad.Close)
	var (
		mu      sync.Mutex
		pool    = map[string]Member{"a": stub(good)}
		version atomic.Uint64
		copies  atomic.Int32
	)
	h := dutytest.New()
	cfg := config(nil)
	cfg.Pool = func() map[string]Member {
		copies.Add(1)
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]Member, len(pool))
		for k, v := range pool {
			out[k] = v
		}
		return out
	}
	cfg.PoolVersion = version.Load
	setPool := func(name string, mem Member) {
		mu.Lock()
		pool[name] = mem
		mu.Unlock()
		version.Add(1)
	}
	m := New(h, cfg)
	pass := func() int32 {
		before := copies.Load()
		m.Reconcile(context.Background())
		m.Wait()
		return copies.Load() - before
	}
	if n := pass(); n != 1 {
		t.Fatalf("first pass copied the pool %d times, want 1", n)
	}
	if mc, ok := machine(h, "a"); !ok || mc.State != fsm.MachineUp {
		t.Fatalf("a = %+v (found %v), want up", mc, ok)
	}
	if n := pass(); n != 1 {
		t.Errorf("the pass after a join copied the pool %d times, want 1 (it looks again)", n)
	}
	for i := range 3 {
		if n := pass(); n != 0 {
			t.Errorf("unchanged pass %d copied the pool %d times, want 0", i, n)
		}
	}

	// Gossip says a failed: the next pass looks, and a leaves.
	setPool("a", Member{Meta: client.NodeMeta{Role: client.RoleStub, HTTP: good}})
	if n := pass(); n != 1 {
		t.Errorf("the pass after a gossip change copied the pool %d times, want 1", n)
	}
	if mc, _ := machine(h, "a"); mc.State != fsm.MachineDown {
		t.Errorf("a is %s after gossip reported it failed, want down", mc.State)
	}
	pass() // after the leave: looks once more, starts nothing
	if n := pass(); n != 0 {
		t.Errorf("unchanged pass after the leave copied the pool %d times, want 0", n)
	}

	// A machine's record changes in the database alone: the next pass looks.
	setPool("a", stub(good))
	pass()
	pass()
	h.MustApply(t, fsm.StubLeaveType, fsm.StubLeave{At: time.Now().UTC(), Machine: "a", Reason: "test"})
	if n := pass(); n != 1 {
		t.Errorf("the pass after a database change copied the pool %d times, want 1", n)
	}
	if mc, _ := machine(h, "a"); mc.State != fsm.MachineUp {
		t.Errorf("a is %s, want up again (alive in gossip)", mc.State)
	}

	// A join that fails is tried again on every pass.
	setPool("c", stub(strings.TrimPrefix(bad.URL, "http://")))
	for range 3 {
		pass()
	}
	if n := refused.Load(); n != 3 {
		t.Errorf("c's stub asked %d times in 3 passes, want 3 (a failed join is retried)", n)
	}

	// The end of the absent grace: a machine gossip never mentioned
	// leaves on the first pass after it, though nothing changed.
	mu.Lock()
	delete(pool, "c")
	mu.Unlock()
	version.Add(1)
	joinMachine(t, h, "ghost", "127.0.0.1:1")
	m.since = time.Now().Add(-absentGrace + 200*time.Millisecond)
	pass()
	if n := pass(); n != 0 {
		t.Fatalf("unchanged pass in the grace copied the pool %d times, want 0", n)
	}
	if mc, _ := machine(h, "ghost"); mc.State != fsm.MachineUp {
		t.Fatalf("ghost is %s within the grace, want still up", mc.State)
	}
	time.Sleep(time.Until(m.since.Add(absentGrace + 10*time.Millisecond)))
	if n := pass(); n != 1 {
		t.Errorf("the first pass past the grace copied the pool %d times, want 1", n)
	}
	if mc, _ := machine(h, "ghost"); mc.State != fsm.MachineDown {
		t.Errorf("ghost is %s past the grace, want down", mc.State)
	}
}
