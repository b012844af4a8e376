package stub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"github.com/netmgr/netmgr/stub/supervisor"
	"golang.org/x/sys/unix"
)

// Interactive sessions (package client/session says the design): the
// stub holds the job's end of each one, its pseudo-terminal's master or
// its FIFOs, and the session's log, so the session outlives the server
// that relays it and the client's connection. A server that relays a
// client's session reaches it with GET /v1/session (an HTTP upgrade,
// server certificates only); sessions.go owns the registry, the pumps
// between the job and the log, the detach grace and the session's end.

// sessionLinger bounds how long a session whose job has ended waits for a
// client to take its last bytes and its exit.
const sessionLinger = 10 * time.Minute

// launchWait bounds how long a shell waits for its attempt's Start.
const launchWait = 30 * time.Second

// sessions is the stub's registry of interactive sessions by attempt.
type sessions struct {
	log    *slog.Logger
	signal func(ctx context.Context, k client.AttemptRef, sig unix.Signal, grace time.Duration) error

	mu   sync.Mutex // guards byID and closed
	byID map[sessionKey]*jobSession
	// closed holds the sessions that ended and whose end no relaying
	// server has yet been told (probeSession), with when they ended:
	// the first relay to ask records the close, any other learns it
	// was told already, so two relays whose connections end together
	// record one close. Entries older than closedKeptFor are dropped.
	closed map[sessionKey]time.Time
	// shellIDs holds the shell ids started in each attempt, with when
	// their session ended (zero while it lives), so that a client's late
	// reconnection (its connection broke as its shell's session closed)
	// never starts the command again. Ended ids older than
	// shellIDsKeptFor are dropped.
	shellIDs map[sessionKey]time.Time
}

// shellIDsKeptFor bounds how long an ended shell's id stays refused: past
// any client's reconnection (reconnectFor) and a session's sessionLinger.
const shellIDsKeptFor = time.Hour

// closedKeptFor bounds how long an ended session waits for a relay's
// probe; relays ask for a few seconds after their connection ends.
const closedKeptFor = 30 * time.Second

// sessionKey names a session: an attempt's own (shell "") or a shell's in
// it, by the id its client chose.
type sessionKey struct {
	k     client.AttemptRef
	shell string
}

func newSessions(log *slog.Logger, signal func(context.Context, client.AttemptRef, unix.Signal, time.Duration) error) *sessions {
	return &sessions{log: log, signal: signal, byID: make(map[sessionKey]*jobSession), closed: make(map[sessionKey]time.Time), shellIDs: make(map[sessionKey]time.Time)}
}

// jobSession is the stub's end of one job's session.
type jobSession struct {
	k     client.AttemptRef
	shell string // the shell's id, "" for the job's own session
	pid   int    // a shell's process (and group); 0 for the job's own
	mode  session.Mode
	owner string
	link  *session.Link
	log   *slog.Logger
	reg   *sessions

	tty    *os.File // the pseudo-terminal's master, with a terminal
	slave  *os.File // its slave, until the job has it
	stdin  *os.File // the stdin FIFO, opened for writing (and reading, so the job's open never waits)
	stdout *os.File // the FIFOs' reading ends, without a terminal
	stderr *os.File

	pumps sync.WaitGroup // the output pumps

	mu       sync.Mutex // guards attached, timer, exit and done
	attached int        // connections being served
	timer    *time.Timer
	exit     *session.Exit
	done     bool
}

// open makes the session of attempt k in supervisor directory dir for a
// job run by cred (nil: the stub's own user) and returns it, with the
// Stdio the supervisor connects the job to.
func (ss *sessions) open(k client.AttemptRef, shell, dir, owner string, mode session.Mode, cred *supervisor.Cred) (*jobSession, *supervisor.Stdio, error) {
	js := &jobSession{k: k, shell: shell, mode: mode, owner: owner, link: session.NewAcceptorLink(0), reg: ss, log: ss.log.With("attempt", k.String(), "shell", shell)}
	var stdio supervisor.Stdio
	if mode.TTY {
		master, slave, err := pty.Open()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: open a pseudo-terminal: %w", errMachineFault, err)
		}
		js.tty, js.slave = master, slave
		if cred != nil {
			// The terminal is the job's user's, as login makes it.
			if err := slave.Chown(int(cred.UID), int(cred.GID)); err != nil {
				js.closeFiles()
				return nil, nil, fmt.Errorf("%w: give the terminal to the job's user: %w", errMachineFault, err)
			}
		}
		_ = slave.Chmod(0o620)
		rows, cols := mode.Rows, mode.Cols
		if rows == 0 || cols == 0 {
			rows, cols = 24, 80
		}
		_ = pty.Setsize(master, &pty.Winsize{Rows: rows, Cols: cols})
		stdio.TTY = slave.Name()
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("%w: make supervisor dir: %w", errMachineFault, err)
		}
		var files [3]*os.File
		for i, name := range []string{"stdin", "stdout", "stderr"} {
			if shell != "" {
				name = "shell-" + shell + "." + name
			}
			p := filepath.Join(dir, name)
			_ = os.Remove(p)
			if err := unix.Mkfifo(p, 0o600); err != nil {
				closeFiles(files[:i])
				return nil, nil, fmt.Errorf("%w: make %s FIFO: %w", errMachineFault, name, err)
			}
			flag := os.O_RDONLY | unix.O_NONBLOCK
			if i == 0 {
				flag = os.O_RDWR // a writer before the job opens it, so its read waits for input
			}
			f, err := os.OpenFile(p, flag, 0)
			if err != nil {
				closeFiles(files[:i])
				return nil, nil, fmt.Errorf("%w: open %s FIFO: %w", errMachineFault, name, err)
			}
			files[i] = f
		}
		js.stdin, js.stdout, js.stderr = files[0], files[1], files[2]
		stdio.Stdin, stdio.Stdout, stdio.Stderr = js.stdin.Name(), js.stdout.Name(), js.stderr.Name()
	}
	ss.mu.Lock()
	ss.byID[sessionKey{k, shell}] = js
	ss.mu.Unlock()
	return js, &stdio, nil
}

// closeFiles closes the files that are set.
func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeFiles closes every file of the session.
func (js *jobSession) closeFiles() {
	closeFiles([]*os.File{js.tty, js.slave, js.stdin, js.stdout, js.stderr})
}

// abort ends a session whose job did not start.
func (js *jobSession) abort() {
	js.reg.forget(js)
	js.link.Close()
	js.closeFiles()
}

// started runs the session once its job runs: the stub lets go of the
// terminal's slave, the pumps start, and the detach grace runs until a
// client attaches.
func (js *jobSession) started() {
	if js.slave != nil {
		_ = js.slave.Close()
		js.slave = nil
	}
	if js.tty != nil {
		js.pumps.Go(func() { js.pump(js.tty, session.FrameStdout) })
	} else {
		js.pumps.Go(func() { js.pump(js.stdout, session.FrameStdout) })
		js.pumps.Go(func() { js.pump(js.stderr, session.FrameStderr) })
	}
	go js.input()
	js.mu.Lock()
	js.detached()
	js.mu.Unlock()
}

// pump sends what the job writes on f as frames of type typ until the
// job's side is closed.
func (js *jobSession) pump(f *os.File, typ byte) {
	buf := make([]byte, session.MaxData)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if js.link.Send(session.Frame{Type: typ, Data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
		}
		if err != nil {
			// EOF from a FIFO, EIO from a terminal whose slave is closed.
			return
		}
	}
}

// input gives the job what the client sends.
func (js *jobSession) input() {
	in := js.stdin
	if js.tty != nil {
		in = js.tty
	}
	for {
		f, err := js.link.Recv()
		if err != nil {
			return
		}
		switch f.Type {
		case session.FrameStdin:
			if in != nil {
				if _, err := in.Write(f.Data); err != nil && !errors.Is(err, syscall.EPIPE) {
					js.log.Debug("session input", "err", err)
				}
			}
		case session.FrameStdinEOF:
			if js.tty == nil && js.stdin != nil {
				_ = js.stdin.Close()
				in = nil
			}
		case session.FrameResize:
			if rows, cols, ok := f.WindowSize(); ok && js.tty != nil {
				_ = pty.Setsize(js.tty, &pty.Winsize{Rows: rows, Cols: cols})
			}
		case session.FrameSignal:
			if sig, err := parseSignal(string(f.Data)); err == nil {
				js.signal(sig)
			}
		}
	}
}

// ended is told how the job ended; once its output is all in the log the
// exit follows it, and the session closes once the client has it all (or
// after sessionLinger).
func (js *jobSession) ended(e session.Exit) {
	js.mu.Lock()
	if js.exit != nil {
		js.mu.Unlock()
		return
	}
	js.exit = &e
	js.mu.Unlock()
	go func() {
		js.pumps.Wait()
		if js.link.Send(e.Frame()) == nil {
			drained := make(chan struct{})
			go func() { js.link.WaitDrained(); close(drained) }()
			select {
			case <-drained:
			case <-time.After(sessionLinger):
			}
		}
		js.finish()
	}()
}

// finish closes the session for good.
func (js *jobSession) finish() {
	js.mu.Lock()
	js.done = true
	if js.timer != nil {
		js.timer.Stop()
	}
	js.mu.Unlock()
	js.reg.forget(js)
	js.link.Close()
	js.closeFiles()
	js.log.Info("session closed")
}

// detached starts the grace that runs while no client is attached; js.mu
// is held.
func (js *jobSession) detached() {
	if js.attached > 0 || js.exit != nil || js.done {
		return
	}
	if js.timer != nil {
		js.timer.Stop()
	}
	js.timer = time.AfterFunc(js.mode.Grace, js.hangUp)
}

// hangUp sends SIGHUP to the job, as a terminal's hang-up would, once
// the grace has passed with no client attached.
func (js *jobSession) hangUp() {
	js.mu.Lock()
	idle := js.attached == 0 && js.exit == nil && !js.done
	js.mu.Unlock()
	if !idle {
		return
	}
	js.log.Info("no client came back within the grace: hang-up", "grace", js.mode.Grace)
	js.signal(unix.SIGHUP)
}

// signal sends sig to the session's job, or to its shell's process group.
func (js *jobSession) signal(sig unix.Signal) {
	var err error
	if js.shell != "" {
		err = unix.Kill(-js.pid, sig)
	} else {
		err = js.reg.signal(context.Background(), js.k, sig, 0)
	}
	if err != nil {
		js.log.Warn("signal the session's job", "signal", sig, "err", err)
	}
}

// attach serves the session over conn until it breaks; a later attach
// takes over from an earlier one.
func (js *jobSession) attach(conn net.Conn, who string) {
	js.mu.Lock()
	if js.done {
		js.mu.Unlock()
		_ = conn.Close()
		return
	}
	js.attached++
	if js.timer != nil {
		js.timer.Stop()
	}
	js.mu.Unlock()
	js.log.Info("session attached", "by", who)
	err := js.link.Serve(conn)
	js.mu.Lock()
	js.attached--
	js.detached()
	js.mu.Unlock()
	if err != nil && !errors.Is(err, session.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
		js.log.Info("session connection ended", "err", err)
	}
}

// get returns the session of attempt k, or of its shell, nil if none.
func (ss *sessions) get(k client.AttemptRef, shell string) *jobSession {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.byID[sessionKey{k, shell}]
}

// forget drops js from the registry, keeping its end for the first
// relay that asks (claimClose).
func (ss *sessions) forget(js *jobSession) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	key := sessionKey{js.k, js.shell}
	if ss.byID[key] != js {
		return
	}
	delete(ss.byID, key)
	now := time.Now()
	for k, at := range ss.closed {
		if now.Sub(at) > closedKeptFor {
			delete(ss.closed, k)
		}
	}
	ss.closed[key] = now
	if js.shell != "" {
		ss.shellEnded(key, now)
	}
}

// claimShell reserves shell id sid in attempt k for a shell about to
// start; false when a shell of that id has started there already.
func (ss *sessions) claimShell(k client.AttemptRef, sid string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	key := sessionKey{k, sid}
	if _, used := ss.shellIDs[key]; used {
		return false
	}
	ss.shellIDs[key] = time.Time{}
	return true
}

// shellFailed marks the shell id that claimShell reserved as ended: its
// shell did not start.
func (ss *sessions) shellFailed(k client.AttemptRef, sid string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.shellEnded(sessionKey{k, sid}, time.Now())
}

// shellEnded records when the shell of key ended and drops the ids that
// ended more than shellIDsKeptFor ago; ss.mu is held.
func (ss *sessions) shellEnded(key sessionKey, now time.Time) {
	for k, at := range ss.shellIDs {
		if !at.IsZero() && now.Sub(at) > shellIDsKeptFor {
			delete(ss.shellIDs, k)
		}
	}
	ss.shellIDs[key] = now
}

// claimClose reports whether the session of attempt k (or its shell)
// ended and no relay has been told so yet; the first caller gets true.
func (ss *sessions) claimClose(k client.AttemptRef, shell string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	key := sessionKey{k, shell}
	if _, ok := ss.closed[key]; !ok {
		return false
	}
	delete(ss.closed, key)
	return true
}

// closeAll ends every session (the stub stops).
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	all := make([]*jobSession, 0, len(ss.byID))
	for _, js := range ss.byID {
		all = append(all, js)
	}
	ss.mu.Unlock()
	for _, js := range all {
		js.link.Close()
		js.closeFiles()
	}
}

// SessionUpgrade is the Upgrade header's protocol of a session's
// connection, on every hop.
const SessionUpgrade = client.SessionUpgrade

// handleSession serves GET /v1/session?job=&instance=&attempt=&by=: a
// server relays a client to the session of that attempt. The answer is
// 101 Switching Protocols, after which the connection carries the
// session's link. With probe=1 it only says whether the session lives
// (probeSession).
func (s *Stub) handleSession(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var k client.AttemptRef
	var err1, err2, err3 error
	k.JobID, err1 = strconv.ParseUint(q.Get("job"), 10, 64)
	k.Instance, err2 = strconv.Atoi(q.Get("instance"))
	k.Attempt, err3 = strconv.ParseUint(q.Get("attempt"), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("session: job, instance and attempt must be numbers: %w", err))
		return
	}
	if q.Get("probe") == "1" {
		s.probeSession(w, k, "")
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), SessionUpgrade) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("session: want Upgrade: %s", SessionUpgrade))
		return
	}
	js := s.runner.sessions.get(k, "")
	if js == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("attempt %s on %s has no interactive session (not interactive, ended and taken, or this stub restarted since)", k, s.cfg.Name))
		return
	}
	conn, err := client.AcceptUpgrade(w)
	if err != nil {
		s.log.Warn("session upgrade", "attempt", k, "err", err)
		return
	}
	js.attach(conn, q.Get("by"))
}

// probeSession answers a relaying server's probe=1 (after its relayed
// connection ended, to tell a closed session from a detached one): 204
// while the session of attempt k (or its shell sid) lives; 404 to the
// first relay to ask once it has closed, which records the close; 410
// to any other, and where no session is known (the stub restarted), so
// that a close is recorded once. It starts nothing.
func (s *Stub) probeSession(w http.ResponseWriter, k client.AttemptRef, sid string) {
	switch {
	case s.runner.sessions.get(k, sid) != nil:
		w.WriteHeader(http.StatusNoContent)
	case s.runner.sessions.claimClose(k, sid):
		writeError(w, http.StatusNotFound, fmt.Errorf("attempt %s on %s has no interactive session", k, s.cfg.Name))
	default:
		writeError(w, http.StatusGone, fmt.Errorf("the interactive session of attempt %s on %s has closed, and a relay was told", k, s.cfg.Name))
	}
}

// handleShell serves GET
// /v1/shell?job=&instance=&attempt=&by=&sid=&cmd=...&tty=ROWSxCOLS: a
// server relays a client (netmgr shell) to a command run inside the
// attempt's running job, as the job's user, in its directory, environment
// and cgroup. The first request of a shell id starts the command; later
// ones attach to its session again, as GET /v1/session does, and once it
// has ended they are refused (410), never started again.
func (s *Stub) handleShell(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var k client.AttemptRef
	var err1, err2, err3 error
	k.JobID, err1 = strconv.ParseUint(q.Get("job"), 10, 64)
	k.Instance, err2 = strconv.Atoi(q.Get("instance"))
	k.Attempt, err3 = strconv.ParseUint(q.Get("attempt"), 10, 64)
	sid := q.Get("sid")
	if err := errors.Join(err1, err2, err3); err != nil || sid == "" || len(sid) > 64 || strings.ContainsAny(sid, "/.") {
		writeError(w, http.StatusBadRequest, fmt.Errorf("shell: job, instance and attempt must be numbers and sid a plain id: %w", err))
		return
	}
	if q.Get("probe") == "1" {
		s.probeSession(w, k, sid)
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), SessionUpgrade) {
		writeError(w, http.StatusBadRequest, fmt.Errorf("shell: want Upgrade: %s", SessionUpgrade))
		return
	}
	js := s.runner.sessions.get(k, sid)
	if js == nil {
		if !s.runner.sessions.claimShell(k, sid) {
			writeError(w, http.StatusGone, fmt.Errorf("shell %s in attempt %s on %s has ended", sid, k, s.cfg.Name))
			return
		}
		var status int
		var err error
		js, status, err = s.runner.startShell(k, sid, q["cmd"], q.Get("tty"))
		if err != nil {
			s.runner.sessions.shellFailed(k, sid)
			writeError(w, status, err)
			return
		}
	}
	conn, err := client.AcceptUpgrade(w)
	if err != nil {
		s.log.Warn("shell upgrade", "attempt", k, "err", err)
		return
	}
	js.attach(conn, q.Get("by"))
}

// startShell starts command (the login shell when empty) inside attempt
// k's running job, connected to a new session of id sid, with a terminal
// of tty's size ("ROWSxCOLS") unless tty is empty.
func (r *runner) startShell(k client.AttemptRef, sid string, command []string, tty string) (*jobSession, int, error) {
	r.mu.Lock()
	a, ok := r.attempts[k]
	r.mu.Unlock()
	if ok {
		select { // its Start may still be on its way
		case <-a.ready:
		case <-time.After(launchWait):
		}
	}
	r.mu.Lock()
	running := ok && a.running()
	var cred *supervisor.Cred
	r.mu.Unlock()
	if !running {
		return nil, http.StatusConflict, fmt.Errorf("shell: attempt %s does not run on %s", k, r.machine)
	}
	mode := session.Mode{Grace: session.DefaultGrace}
	if tty != "" {
		m, err := session.ParseMode("tty " + tty + " 0s")
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("shell: %w", err)
		}
		mode.TTY, mode.Rows, mode.Cols = true, m.Rows, m.Cols
	}
	if c, err := credential(a.rec.Owner); err == nil && c != nil {
		cred = &supervisor.Cred{UID: c.Uid, GID: c.Gid, Groups: c.Groups}
	}
	js, stdio, err := r.sessions.open(k, sid, a.dir, a.rec.Owner, mode, cred)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	e := supervisor.Exec{Stdio: stdio}
	if len(command) > 0 {
		e.Path, e.Args = command[0], command[1:]
	}
	pid, ended, err := r.sup.Exec(r.ctx, a.dir, e)
	if err != nil {
		js.abort()
		return nil, http.StatusConflict, fmt.Errorf("shell in attempt %s: %w", k, err)
	}
	js.pid = pid
	js.started()
	go func() {
		res, ok := <-ended
		if !ok {
			res = supervisor.Result{ExitCode: lostExitCode, Error: "the job's supervisor went"}
		}
		js.ended(session.Exit{Code: res.ExitCode, Signal: res.Signal, Error: res.Error})
	}()
	r.log.Info("shell started in the job", "attempt", k, "pid", pid, "command", command)
	return js, 0, nil
}
