package supervisor

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A stub runs its attempts in one supervisor process, its supervisor
// host, rather than one process per attempt: a process per attempt cost
// about 15 ms of CPU (a Go runtime's start, its page faults, its exit),
// five times what the rest of an attempt costs the machine. The host runs
// in a session of its own, so it outlives the stub; a stub that starts
// finds the host already running on its DataDir and goes on using it.
//
// The host serves hostSock in the attempts directory. Each connection
// carries one request: a start, answered once the job runs or could
// not be started; a lifeline, which the stub holds open while it runs and
// on which the host pushes a hostNotice once a job's result is written;
// or a signal or wait for one of its attempts, answered as an attempt's
// own supervisor answers them on its socket (the host makes no socket per
// attempt: on this kind of host each new inode costs about a millisecond,
// and the push spares the stub a connection per attempt to wait on). The
// host exits once no lifeline is open and no job runs. Everything else
// about an attempt is as under a supervisor of its own: its directory's
// spec, state and result.

// hostEnv, set in a process's environment, makes the process the
// supervisor host of the attempts directory it names.
const hostEnv = "NETMGR_SUPERVISOR_HOST"

// Files of the supervisor host, in the attempts directory. The socket's
// name carries the version of its protocol: a stub of another version
// starts a host of its own beside a running one, which finishes its jobs
// and exits (each attempt's state names the socket that serves it).
const (
	hostSock = "host-2.sock"
	hostLog  = "host.log"
)

// hostIdleWait is how long a host that no stub has reached yet, and that
// runs no job, waits before it exits.
const hostIdleWait = 30 * time.Second

// Operations of the host socket, besides opSignal and opWait.
const (
	opStart    = "start"    // start the attempt of Dir; answered with a hostReply
	opLifeline = "lifeline" // held open by the stub; answered with a hostNotice per job that ends
)

// hostReply answers a start. Exiting means the host started nothing
// because it is on its way out: the stub starts another host.
type hostReply struct {
	startStatus
	Exiting bool `json:"exiting,omitempty"`
}

// server is the serving half of a supervisor host.
type server struct {
	*host
	ln         *net.UnixListener
	attemptLog *slog.Logger // for the attempts: warnings and errors only

	pushMu sync.Mutex // serializes the writes on lifelines

	mu        sync.Mutex          // guards running, attempts, lifelines, held and closing
	running   int                 // attempts whose result is not written yet
	attempts  map[string]*attempt // by directory, until their result is written
	lifelines int                 // lifelines open
	held      map[net.Conn]bool   // the lifelines that still take notices
	closing   bool
}

// RunHost is the supervisor host role of the netmgr binary
// (`netmgr supervise --host ROOT`, started by the stub): it runs the
// attempts the stub asks for on ROOT/host-2.sock, ROOT being the stub's
// attempts directory, each as RunAttempt runs one, and returns once no
// stub holds a lifeline and no job runs.
func RunHost(root string) error {
	_ = os.Unsetenv(hostEnv)
	if err := os.Chdir(root); err != nil {
		return fmt.Errorf("supervisor host: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	h := &server{
		host:     newHost(root, false, log),
		attempts: make(map[string]*attempt),
		held:     make(map[net.Conn]bool),
		// The stub logs every attempt's start and end; the host's log,
		// which no attempt's removal trims, keeps what went wrong.
		attemptLog: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	h.sock = filepath.Join(root, hostSock)
	// A host already listening keeps its name and its jobs: taking the
	// name would leave them out of the stub's reach. Only a name no
	// process listens on is removed.
	if c, err := net.Dial("unix", hostSock); err == nil {
		_ = c.Close()
		return errHostRunning
	}
	h.startReaper()
	_ = os.Remove(hostSock)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: hostSock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("supervisor host: %w", err)
	}
	// A later host may bind the same name while this one finishes its
	// last jobs: the name is that host's then.
	ln.SetUnlinkOnClose(false)
	h.ln = ln
	if _, err := unix.FcntlInt(statusFD, unix.F_GETFD, 0); err == nil {
		status := os.NewFile(statusFD, "status")
		_ = json.NewEncoder(status).Encode(startStatus{PID: os.Getpid()})
		_ = status.Close()
	}
	log.Info("supervisor host ready", "pid", os.Getpid(), "dir", root)
	idle := time.AfterFunc(hostIdleWait, h.exitIfIdle)
	defer idle.Stop()

	var wg sync.WaitGroup
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			break
		}
		wg.Go(func() { h.handle(conn, &wg) })
	}
	wg.Wait()
	log.Info("supervisor host exits: no stub and no job")
	return nil
}

// handle serves one connection.
func (h *server) handle(conn *net.UnixConn, wg *sync.WaitGroup) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	var req request
	if err := json.NewDecoder(conn).Decode(&req); err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	switch req.Op {
	case opSignal, opWait, opExec:
		h.mu.Lock()
		s := h.attempts[req.Dir]
		h.mu.Unlock()
		if s == nil {
			// Its result is written, or it never started here.
			_ = json.NewEncoder(conn).Encode(response{Error: errNoAttempt.Error()})
			return
		}
		s.answer(conn, req)
	case opLifeline:
		if !h.enter(&h.lifelines) {
			return
		}
		h.mu.Lock()
		h.held[conn] = true
		h.mu.Unlock()
		_, _ = io.Copy(io.Discard, conn) // until the stub closes it or dies
		h.mu.Lock()
		delete(h.held, conn)
		h.mu.Unlock()
		h.leave(&h.lifelines)
	case opStart:
		var reply hostReply
		s := h.start(req.Dir, req.Spec, &reply)
		_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
		_ = json.NewEncoder(conn).Encode(reply)
		if s != nil {
			wg.Go(func() {
				s.run()
				h.mu.Lock()
				delete(h.attempts, s.dir)
				held := slices.Collect(maps.Keys(h.held))
				h.mu.Unlock()
				h.push(held, hostNotice{Dir: s.dir, Result: s.result})
				h.leave(&h.running)
			})
		}
	}
}

// push writes n on each lifeline of held. A lifeline that does not take
// it is cut: its stub falls back to asking for each result.
func (h *server) push(held []net.Conn, n hostNotice) {
	if len(held) == 0 {
		return
	}
	b, err := json.Marshal(n)
	if err != nil {
		h.log.Error("encode the end of an attempt", "dir", n.Dir, "err", err)
		return
	}
	b = append(b, '\n')
	h.pushMu.Lock()
	defer h.pushMu.Unlock()
	for _, conn := range held {
		_ = conn.SetWriteDeadline(time.Now().Add(requestTimeout))
		if _, err := conn.Write(b); err != nil {
			h.log.Warn("lifeline cut: it took no notice", "err", err)
			h.mu.Lock()
			delete(h.held, conn)
			h.mu.Unlock()
			_ = conn.Close()
		}
	}
}

// start starts spec as the attempt of dir, filling reply, and returns its
// supervisor, nil if no job runs. The attempt logs to the host's log.
func (h *server) start(dir string, spec *Spec, reply *hostReply) *attempt {
	if filepath.Dir(dir) != h.root || !filepath.IsAbs(dir) {
		reply.Error = fmt.Sprintf("supervisor host of %s: %s is not an attempt directory here", h.root, dir)
		return nil
	}
	if spec == nil {
		reply.Error = fmt.Sprintf("supervisor host: no spec for %s", filepath.Base(dir))
		return nil
	}
	if !h.enter(&h.running) {
		reply.Exiting = true
		return nil
	}
	s, st, err := h.begin(dir, "", spec, h.attemptLog.With("attempt", filepath.Base(dir)))
	reply.startStatus = st
	if s == nil {
		h.log.Warn("attempt not started", "dir", dir, "err", err)
		h.leave(&h.running)
		return nil
	}
	h.mu.Lock()
	h.attempts[dir] = s
	h.mu.Unlock()
	return s
}

// enter counts one more of *n, unless the host is closing.
func (h *server) enter(n *int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	*n++
	return true
}

// leave counts one less of *n, and closes the host when nothing is left.
func (h *server) leave(n *int) {
	h.mu.Lock()
	*n--
	h.mu.Unlock()
	h.exitIfIdle()
}

// exitIfIdle stops the host from accepting when no lifeline is open and
// no job runs.
func (h *server) exitIfIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing || h.running > 0 || h.lifelines > 0 {
		return
	}
	h.closing = true
	_ = h.ln.Close()
}
