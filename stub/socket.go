package stub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrSocketInUse means another process already listens on the user socket
// a stub was told to open.
var ErrSocketInUse = errors.New("another process listens on the user socket")

// userSocket is the machine's user door, as munge is Slurm's: a Unix
// socket every local user may call, on which the stub learns each
// caller's uid from the kernel (SO_PEERCRED) and passes the request on to
// the servers, vouching over its own authenticated link that it comes
// from that user on this machine.
type userSocket struct {
	path  string
	made  os.FileInfo // the socket file this stub made, to remove only that
	ln    net.Listener
	srv   *http.Server
	relay *relay
	log   *slog.Logger
	wg    sync.WaitGroup
}

// peerCred is what the kernel says about the process at the other end of
// a socket connection.
type peerCred struct {
	uid, pid int
	err      error // why the kernel could not say
}

// peerCredKey is the connection context key of the caller's peerCred.
type peerCredKey struct{}

// openUserSocket listens on path for the machine's users: it makes the
// socket's directory (0755) when missing, replaces a stale socket file
// (one no process answers on) but nothing else, and lets every local user
// connect (0666). Requests go to r.
func openUserSocket(path string, r *relay, log *slog.Logger) (*userSocket, error) {
	ln, err := listenUserSocket(path)
	if err != nil {
		return nil, err
	}
	made, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("user socket %s: %w", path, err)
	}
	u := &userSocket{path: path, made: made, ln: ln, relay: r, log: log}
	u.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext:       withPeerCred,
	}
	u.wg.Go(func() {
		if err := u.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("user socket stopped", "socket", path, "err", err)
		}
	})
	log.Info("local users reach the servers through the user socket", "socket", path)
	return u, nil
}

// listenUserSocket prepares path's directory, clears a stale socket and
// listens on path with permissions for every local user.
func listenUserSocket(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("user socket directory: %w", err)
		}
		// Whatever the umask: every user must reach the socket.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("user socket directory: %w", err)
		}
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("user socket: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("user socket: let every user call it: %w", err)
	}
	return ln, nil
}

// removeStaleSocket removes the socket file at path that a stub which
// died left behind. A file that is no socket, or a socket some process
// still answers on, stays, and the stub does not start.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("user socket: %w", err)
	case fi.Mode().Type() != os.ModeSocket:
		return fmt.Errorf("user socket %s: the file exists and is no socket (%s); remove it or give another --socket", path, fi.Mode().Type())
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("user socket %s: %w (is another stub running on this machine?)", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("user socket: remove stale %s: %w", path, err)
	}
	return nil
}

// withPeerCred is the socket server's ConnContext: it asks the kernel who
// the connection's process runs as and keeps the answer in the context of
// every request on the connection.
func withPeerCred(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerCredKey{}, readPeerCred(c))
}

// noPeerCred is a peerCred for a caller the kernel did not name.
func noPeerCred(err error) peerCred { return peerCred{uid: -1, pid: -1, err: err} }

// readPeerCred reads SO_PEERCRED of a Unix socket connection.
func readPeerCred(c net.Conn) peerCred {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return noPeerCred(fmt.Errorf("peer credentials: %T is no Unix socket connection", c))
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return noPeerCred(fmt.Errorf("peer credentials: %w", err))
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return noPeerCred(fmt.Errorf("peer credentials: %w", err))
	}
	if credErr != nil {
		return noPeerCred(fmt.Errorf("peer credentials: SO_PEERCRED: %w", credErr))
	}
	return peerCred{uid: int(cred.Uid), pid: int(cred.Pid)}
}

// callerOf returns what the kernel said about the caller of r.
func callerOf(r *http.Request) peerCred {
	p, ok := r.Context().Value(peerCredKey{}).(peerCred)
	if !ok {
		return noPeerCred(errors.New("peer credentials: the request did not come through the user socket"))
	}
	return p
}

// close stops taking calls, gives those in flight (a followed event
// stream lasts until its caller goes) until ctx ends, and removes the
// socket file.
func (u *userSocket) close(ctx context.Context) error {
	var errs []error
	if err := u.srv.Shutdown(ctx); err != nil {
		if err := u.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close user socket: %w", err))
		}
	}
	u.wg.Wait()
	// Closing the listener unlinks the file; make sure, but never remove
	// a socket another stub has made there since.
	if fi, err := os.Lstat(u.path); err == nil && os.SameFile(fi, u.made) {
		if err := os.Remove(u.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove user socket: %w", err))
		}
	}
	u.relay.close()
	return errors.Join(errs...)
}
