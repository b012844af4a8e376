package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// Errors of the process cluster.
var (
	// ErrTimeout means a wait ran past its deadline.
	ErrTimeout = errors.New("timed out")
	// ErrExited means a process ended while it was expected to run.
	ErrExited = errors.New("process exited")
)

// startTimeout bounds how long a freshly started process may take to open
// its listening ports.
const startTimeout = 20 * time.Second

// stopGrace is how long Stop and KillServer wait after SIGTERM before
// they send SIGKILL.
const stopGrace = 10 * time.Second

// pollEvery is the polling period of every wait.
const pollEvery = 50 * time.Millisecond

var (
	buildMu    sync.Mutex            // guards buildCache
	buildCache = map[string]string{} // dir -> built binary path
)

// BuildBinary builds cmd/netmgr into dir and returns the binary's path. It
// builds at most once per dir in a process, so tests of one package that
// share a directory share the build. It blocks for the duration of
// `go build` and is safe for concurrent use. The working directory must lie
// inside the netmgr module (as it does for `go test` and `go run`).
func BuildBinary(dir string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[dir]; ok {
		return p, nil
	}
	p := filepath.Join(dir, "netmgr")
	cmd := exec.Command("go", "build", "-ldflags", versionLDFlags(), "-o", p, "github.com/netmgr/netmgr/cmd/netmgr")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build netmgr: %w\n%s", err, out)
	}
	buildCache[dir] = p
	return p, nil
}

// versionLDFlags links the tree's version and commit into the binary, as
// the Makefile and scripts/ldflags.sh do, so that its servers report the
// real version (netstatus -s) even when Go records no VCS information (a
// git worktree, GOFLAGS=-buildvcs=false). Outside a git tree it is empty.
func versionLDFlags() string {
	version, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	commit, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	return "-X main.version=" + strings.TrimSpace(string(version)) + " -X main.commit=" + strings.TrimSpace(string(commit))
}

// Proc is one netmgr process of a ProcCluster. Its fields are fixed at
// start and stay the same across RestartServer.
type Proc struct {
	Name       string // server or machine name
	Role       string // client.RoleServer or client.RoleStub
	HTTPAddr   string // API address, host:port
	RaftAddr   string // servers only
	GossipAddr string // memberlist address, host:port
	DataDir    string
	ExecDir    string // stubs only
	LogPath    string // stdout and stderr of every run, appended
	// Socket is a stub's user socket, where the machine's users reach the
	// servers as themselves (stubs only).
	Socket string
	// TLS is the process's CA, certificate and key; zero in an insecure
	// cluster, whose processes run with --insecure.
	TLS pki.Files
	// GossipKeyring is the cluster's gossip keyring file, which encrypts
	// gossip; empty in an insecure cluster.
	GossipKeyring string
	// Args are more command-line arguments, after the others, for every
	// start of the process (RestartStub, RestartServer too): a
	// benchmark's or test's own flags, such as a stub's owner policy or a
	// server's mail relay.
	Args []string

	database string // a server's --database file, if any

	mu   sync.Mutex    // guards cmd and done
	cmd  *exec.Cmd     // the current run; nil before the first start
	done chan struct{} // closed when the current run has exited
}

// URL returns the process's API as a URL: https:// in a TLS cluster,
// http:// in an insecure one.
func (p *Proc) URL() string {
	if p.TLS != (pki.Files{}) {
		return "https://" + p.HTTPAddr
	}
	return "http://" + p.HTTPAddr
}

// Running reports whether the process's current run has not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// PID returns the process id of the current run, 0 before the first start.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// ProcCluster is a set of real `netmgr server` and `netmgr stub` processes
// listening on 127.0.0.1, for end-to-end tests and the benchmark. Its
// methods are safe for concurrent use, except that Stop must be the last
// call.
type ProcCluster struct {
	bin     string
	dir     string
	Servers []*Proc
	Stubs   []*Proc
	cl      *client.Client // short retries, for polling
	sec     *procTLS       // nil for an insecure cluster
	sockDir string         // a short directory of user sockets, when dir's names are too long for them
}

// StartProcCluster starts servers `netmgr server` processes (all with
// --bootstrap-expect servers, all joining the first server's gossip address)
// and stubs `netmgr stub` processes (joining every server's gossip
// address). Data directories, execution directories, user sockets and one
// log file per process live under dir. The cluster is secure as a real
// one: a throw-away CA under dir/tls, a certificate for every process, TLS
// on every link, gossip encrypted with a keyring (GossipKeyring), and a
// database that allows root jobs (the tests run as root on what is, for
// the cluster, a pool machine). It returns once every
// process listens on its ports; it does not wait for a leader (see
// WaitLeader) or for the stubs to be registered (see WaitMachines). On
// error it stops whatever it started.
func StartProcCluster(bin, dir string, servers, stubs int) (*ProcCluster, error) {
	return startProcCluster(bin, dir, servers, stubs, true, nil)
}

// StartProcClusterArgs is StartProcCluster with serverArgs added to every
// server's command line (the mail relay, say).
func StartProcClusterArgs(bin, dir string, servers, stubs int, serverArgs []string) (*ProcCluster, error) {
	return startProcCluster(bin, dir, servers, stubs, true, serverArgs)
}

// StartInsecureProcCluster is StartProcCluster with every process run
// --insecure: plaintext, and a request is whoever its X-Netmgr-User
// header says. The stubs still have their user sockets.
func StartInsecureProcCluster(bin, dir string, servers, stubs int) (*ProcCluster, error) {
	return startProcCluster(bin, dir, servers, stubs, false, nil)
}

// StartInsecureProcClusterArgs is StartInsecureProcCluster with
// serverArgs added to every server's command line.
func StartInsecureProcClusterArgs(bin, dir string, servers, stubs int, serverArgs []string) (*ProcCluster, error) {
	return startProcCluster(bin, dir, servers, stubs, false, serverArgs)
}

func startProcCluster(bin, dir string, servers, stubs int, secure bool, serverArgs []string) (*ProcCluster, error) {
	if servers < 1 {
		return nil, fmt.Errorf("start cluster: need at least one server, got %d", servers)
	}
	// Ports: servers need HTTP, Raft and gossip; stubs HTTP and gossip.
	ports, err := freePorts(3*servers + 2*stubs)
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	next := func() string {
		p := ports[0]
		ports = ports[1:]
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	c := &ProcCluster{bin: bin, dir: dir}
	for i := range servers {
		name := fmt.Sprintf("server%d", i+1)
		c.Servers = append(c.Servers, &Proc{
			Name:       name,
			Role:       client.RoleServer,
			HTTPAddr:   next(),
			RaftAddr:   next(),
			GossipAddr: next(),
			DataDir:    filepath.Join(dir, name, "data"),
			LogPath:    filepath.Join(dir, name+".log"),
			Args:       serverArgs,
		})
	}
	for i := range stubs {
		name := fmt.Sprintf("stub%d", i+1)
		c.Stubs = append(c.Stubs, &Proc{
			Name:       name,
			Role:       client.RoleStub,
			HTTPAddr:   next(),
			GossipAddr: next(),
			DataDir:    filepath.Join(dir, name, "data"),
			ExecDir:    filepath.Join(dir, name, "exec"),
			LogPath:    filepath.Join(dir, name+".log"),
		})
	}
	if err := c.prepare(secure); err != nil {
		c.Stop()
		return nil, fmt.Errorf("start cluster: %w", err)
	}

	// The first server must be listening before the others join it.
	if err := c.start(c.Servers[0], nil); err != nil {
		c.Stop()
		return nil, err
	}
	first := []string{c.Servers[0].GossipAddr}
	for _, p := range c.Servers[1:] {
		if err := c.launch(p, first); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, p := range c.Servers[1:] {
		if err := waitListening(p); err != nil {
			c.Stop()
			return nil, err
		}
	}
	var gossip []string
	for _, s := range c.Servers {
		gossip = append(gossip, s.GossipAddr)
	}
	for _, p := range c.Stubs {
		if err := c.launch(p, gossip); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, p := range c.Stubs {
		if err := waitListening(p); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Dir returns the directory holding the cluster's data and logs.
func (c *ProcCluster) Dir() string { return c.dir }

// Addr returns the servers' API URLs, comma-separated, as NETMGR_ADDR and
// --addr take them.
func (c *ProcCluster) Addr() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// WaitLeader blocks until the server group reports exactly one leader and
// that leader is a running process of the cluster, or timeout passes.
func (c *ProcCluster) WaitLeader(timeout time.Duration) error {
	var last string
	err := poll(timeout, func(ctx context.Context) bool {
		i, name, why := c.leader(ctx)
		last = why
		return i >= 0 && name != ""
	})
	if err != nil {
		return fmt.Errorf("wait for leader: %w (last seen: %s)", err, last)
	}
	return nil
}

// Leader returns the index in Servers and the name of the current leader,
// or -1 and "" when the group reports none. It makes one round of requests.
func (c *ProcCluster) Leader() (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	i, name, _ := c.leader(ctx)
	return i, name
}

func (c *ProcCluster) leader(ctx context.Context) (int, string, string) {
	ss, err := c.cl.Servers(ctx)
	if err != nil {
		return -1, "", err.Error()
	}
	var leaders []string
	for _, s := range ss {
		if s.Role == "leader" {
			leaders = append(leaders, s.Name)
		}
	}
	if len(leaders) != 1 {
		return -1, "", fmt.Sprintf("%d leaders in %+v", len(leaders), ss)
	}
	for i, p := range c.Servers {
		if p.Name == leaders[0] && p.Running() {
			return i, p.Name, ""
		}
	}
	return -1, "", fmt.Sprintf("leader %q is not a running server", leaders[0])
}

// WaitMachines blocks until at least n machines are "up" in the server
// group's database, or timeout passes.
func (c *ProcCluster) WaitMachines(n int, timeout time.Duration) error {
	var last string
	err := poll(timeout, func(ctx context.Context) bool {
		ms, err := c.cl.Machines(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		up := 0
		for _, m := range ms {
			if m.State == client.MachineUp {
				up++
			}
		}
		last = fmt.Sprintf("%d of %d machines up", up, len(ms))
		return up >= n
	})
	if err != nil {
		return fmt.Errorf("wait for %d machines: %w (last seen: %s)", n, err, last)
	}
	return nil
}

// KillServer sends sig to server i and blocks until the process has exited
// (sending SIGKILL if it is still alive stopGrace later).
func (c *ProcCluster) KillServer(i int, sig syscall.Signal) error {
	if i < 0 || i >= len(c.Servers) {
		return fmt.Errorf("kill server %d: no such server", i)
	}
	return stopProc(c.Servers[i], sig)
}

// RestartServer starts server i again with its data directory and ports,
// joining the other servers' gossip addresses. The server must have
// exited (see KillServer). It returns once the server listens.
func (c *ProcCluster) RestartServer(i int) error {
	if i < 0 || i >= len(c.Servers) {
		return fmt.Errorf("restart server %d: no such server", i)
	}
	p := c.Servers[i]
	if p.Running() {
		return fmt.Errorf("restart %s: still running", p.Name)
	}
	var join []string
	for j, s := range c.Servers {
		if j != i {
			join = append(join, s.GossipAddr)
		}
	}
	return c.start(p, join)
}

// KillStubMachine simulates the loss of stub i's whole machine: it
// SIGKILLs at once the stub, every supervisor the stub started (found in
// /proc by their --dir or working directory under the stub's data
// directory) and every job process under them, repeating until none is left alive. It returns when
// the first SIGKILL went out, once every one of them is dead and the stub
// reaped. The stub's data and execution directories stay, for
// RestartStub.
func (c *ProcCluster) KillStubMachine(i int) (time.Time, error) {
	if i < 0 || i >= len(c.Stubs) {
		return time.Time{}, fmt.Errorf("kill machine of stub %d: no such stub", i)
	}
	p := c.Stubs[i]
	pid := 0
	if p.Running() {
		pid = p.PID()
	}
	at, err := killMachine(pid, p.DataDir)
	if err != nil {
		return at, fmt.Errorf("kill machine %s: %w", p.Name, err)
	}
	if pid != 0 {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		<-done
	}
	return at, nil
}

// StopStub sends sig to stub i and waits for it to exit (SIGKILL after
// stopGrace). SIGTERM stops it for a restart: the servers hold its jobs
// for their --restart-grace (see RestartStub); SIGINT makes it leave the
// pool.
func (c *ProcCluster) StopStub(i int, sig syscall.Signal) error {
	if i < 0 || i >= len(c.Stubs) {
		return fmt.Errorf("stop stub %d: no such stub", i)
	}
	return stopProc(c.Stubs[i], sig)
}

// RestartStub starts stub i again with its data and execution directories
// and ports, joining the servers' gossip addresses. The stub must have
// exited (see KillStubMachine). It returns once the stub listens; see
// WaitMachines for its registration.
func (c *ProcCluster) RestartStub(i int) error {
	if i < 0 || i >= len(c.Stubs) {
		return fmt.Errorf("restart stub %d: no such stub", i)
	}
	p := c.Stubs[i]
	if p.Running() {
		return fmt.Errorf("restart %s: still running", p.Name)
	}
	var join []string
	for _, s := range c.Servers {
		join = append(join, s.GossipAddr)
	}
	return c.start(p, join)
}

// WaitCaughtUp blocks until server i is a healthy follower of the one
// leader the group reports and its Raft log reaches the leader's last
// index, or timeout passes.
func (c *ProcCluster) WaitCaughtUp(i int, timeout time.Duration) error {
	if i < 0 || i >= len(c.Servers) {
		return fmt.Errorf("wait for server %d: no such server", i)
	}
	name := c.Servers[i].Name
	var last string
	err := poll(timeout, func(ctx context.Context) bool {
		ss, err := c.cl.Servers(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		var me, leader *client.Server
		leaders := 0
		for j := range ss {
			switch {
			case ss[j].Role == "leader":
				leader = &ss[j]
				leaders++
			case ss[j].Name == name:
				me = &ss[j]
			}
		}
		last = fmt.Sprintf("%+v", ss)
		return leaders == 1 && me != nil && me.Role == "follower" && me.Healthy && me.LastIndex >= leader.LastIndex
	})
	if err != nil {
		return fmt.Errorf("wait for %s to catch up: %w (last seen: %s)", name, err, last)
	}
	return nil
}

// Self asks server i alone for its own view (GET /v1/agent/self): its
// role, term, last index and the leader it follows. It fails when the
// server does not answer within ctx.
func (c *ProcCluster) Self(ctx context.Context, i int) (client.Server, error) {
	var st client.Server
	if i < 0 || i >= len(c.Servers) {
		return st, fmt.Errorf("ask server %d: no such server", i)
	}
	p := c.Servers[i]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/v1/agent/self", nil)
	if err != nil {
		return st, fmt.Errorf("ask %s: %w", p.Name, err)
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return st, fmt.Errorf("ask %s: %w", p.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("ask %s: %s", p.Name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("ask %s: %w", p.Name, err)
	}
	return st, nil
}

// Stop sends SIGTERM to every running server and SIGINT to every running
// stub (which then leaves the pool rather than stop for a restart), waits
// for them, and sends SIGKILL to any still alive after stopGrace. It
// blocks until all have exited and is safe to call more than once.
func (c *ProcCluster) Stop() {
	var wg sync.WaitGroup
	for _, p := range append(append([]*Proc(nil), c.Stubs...), c.Servers...) {
		if !p.Running() {
			continue
		}
		sig := syscall.SIGTERM
		if p.Role == client.RoleStub {
			sig = syscall.SIGINT // leave the pool, not stop for a restart
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = stopProc(p, sig)
		}()
	}
	wg.Wait()
	if c.sockDir != "" {
		_ = os.RemoveAll(c.sockDir)
	}
}

// Logs returns the last maxBytes of every process's log, each under a
// header naming the process, for a failing test to print.
func (c *ProcCluster) Logs(maxBytes int) string {
	var b strings.Builder
	for _, p := range append(append([]*Proc(nil), c.Servers...), c.Stubs...) {
		fmt.Fprintf(&b, "==== %s (%s) ====\n", p.Name, p.LogPath)
		data, err := os.ReadFile(p.LogPath)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
			continue
		}
		if len(data) > maxBytes {
			data = data[len(data)-maxBytes:]
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				data = data[i+1:]
			}
			b.WriteString("...\n")
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// args returns the command line of p (without the binary). --config=
// keeps a site's /etc/netmgr/ROLE.toml on the test host out of the test.
func (p *Proc) args(join []string) []string {
	a := []string{p.Role, "--config=",
		"--name", p.Name,
		"--data-dir", p.DataDir,
		"--http", p.HTTPAddr,
		"--gossip", p.GossipAddr,
	}
	if p.TLS == (pki.Files{}) {
		a = append(a, "--insecure")
	} else {
		a = append(a, "--ca-file", p.TLS.CA, "--cert-file", p.TLS.Cert, "--key-file", p.TLS.Key)
	}
	if p.GossipKeyring != "" {
		a = append(a, "--gossip-keyring", p.GossipKeyring)
	}
	if p.Role == client.RoleServer {
		a = append(a, "--raft", p.RaftAddr)
		if p.database != "" {
			a = append(a, "--database", p.database)
		}
	} else {
		a = append(a, "--exec-dir", p.ExecDir, "--socket", p.Socket)
	}
	if len(join) > 0 {
		a = append(a, "--join", strings.Join(join, ","))
	}
	return append(a, p.Args...)
}

// start launches p and waits until it listens.
func (c *ProcCluster) start(p *Proc, join []string) error {
	if err := c.launch(p, join); err != nil {
		return err
	}
	return waitListening(p)
}

// launch starts p's process and a goroutine that reaps it; the goroutine
// ends when the process exits and closes p.done.
func (c *ProcCluster) launch(p *Proc, join []string) error {
	for _, d := range []string{p.DataDir, p.ExecDir} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	args := p.args(join)
	if p.Role == client.RoleServer {
		args = append(args, "--bootstrap-expect", strconv.Itoa(len(c.Servers)))
	}
	fmt.Fprintf(logf, "---- %s %s %s\n", time.Now().Format(time.RFC3339Nano), c.bin, strings.Join(args, " "))
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Dir = c.dir
	// Own process group, so a terminal's ^C reaches only the test; and
	// SIGKILL if the test process dies, so no server outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd = cmd
	p.done = done
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	return nil
}

// waitListening blocks until p accepts TCP connections on its HTTP and
// gossip ports, failing early if the process exits.
func waitListening(p *Proc) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for _, addr := range []string{p.GossipAddr, p.HTTPAddr} {
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("start %s: %s not listening after %v: %w", p.Name, addr, startTimeout, ErrTimeout)
			}
			select {
			case <-done:
				return fmt.Errorf("start %s: %w (see %s); its log ends:\n%s", p.Name, ErrExited, p.LogPath, logTail(p.LogPath, 2000))
			case <-time.After(pollEvery):
			}
		}
	}
	return nil
}

// stopProc sends sig to p, waits up to stopGrace, then sends SIGKILL and
// waits for the exit.
func stopProc(p *Proc, sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("stop %s: never started", p.Name)
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	if sig == syscall.SIGKILL {
		<-done
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = cmd.Process.Kill()
	<-done
	return nil
}

// poll calls cond every pollEvery, each call with a context bounded by the
// remaining time, until it returns true or timeout passes.
func poll(timeout time.Duration, cond func(ctx context.Context) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		ok := cond(ctx)
		cancel()
		if ok {
			return nil
		}
		if time.Now().Add(pollEvery).After(deadline) {
			return fmt.Errorf("after %v: %w", timeout, ErrTimeout)
		}
		<-time.After(pollEvery)
	}
}

// logTail returns the last maxBytes of the log at path, for an error.
func logTail(path string, maxBytes int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	if len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
	}
	return string(data)
}
