package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/session"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// An interactive session from the user's side (netexec -i and --pty,
// netmgr attach, netmgr shell): the terminal or the standard streams on
// one end of a session.Link, a connection through any server on the
// other, made again through the next server whenever it breaks, until the
// job's exit comes. Package client/session says the design.

// reconnectFor is how long a session's client keeps trying to reach a
// server after its connection broke before it gives up (the job keeps its
// session for its detach grace; netmgr attach takes it back).
const reconnectFor = 60 * time.Second

// exitStatus ends the command with the job's exit status, printing
// nothing: netexec --pty and -i exit as their job did.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("the job exited with status %d", e.code) }

// terminalOf returns stdin as a terminal, nil when it is none.
func terminalOf(f *os.File) *os.File {
	if f != nil && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// windowSize is the size of terminal t, 24x80 when it cannot be read.
func windowSize(t *os.File) (rows, cols uint16) {
	if t != nil {
		if ws, err := unix.IoctlGetWinsize(int(t.Fd()), unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
			return ws.Row, ws.Col
		}
	}
	return 24, 80
}

// sessionEnds are the user's side of a session.
type sessionEnds struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            *os.File // the terminal stdin is, nil when none: raw mode, resizes
	errw           io.Writer
}

// runSession connects the user's ends to job ref's session q and returns
// once the job's exit has come: an *exitStatus unless it exited 0.
func runSession(ctx context.Context, c *client.Client, ref string, q client.SessionQuery, ends sessionEnds) error {
	link := session.NewLink(0)
	defer link.Close()
	if ends.tty != nil {
		old, err := term.MakeRaw(int(ends.tty.Fd()))
		if err != nil {
			return fmt.Errorf("terminal raw mode: %w", err)
		}
		// Restored on every way out: the return, and the signals that
		// end this process (a panic's exit skips it; nothing here panics).
		restore := func() { _ = term.Restore(int(ends.tty.Fd()), old) }
		defer restore()
		fatal := make(chan os.Signal, 1)
		signal.Notify(fatal, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
		defer signal.Stop(fatal)
		go func() {
			if sig, ok := <-fatal; ok {
				restore()
				signal.Reset(sig)
				_ = unix.Kill(os.Getpid(), sig.(unix.Signal))
			}
		}()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, unix.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				_ = link.Send(session.Resize(windowSize(ends.tty)))
			}
		}()
		if err := link.Send(session.Resize(windowSize(ends.tty))); err != nil {
			return err
		}
	} else {
		// Without a terminal, Ctrl-C and kill reach the job as signals.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
		defer signal.Stop(sigs)
		go func() {
			for sig := range sigs {
				name := strings.TrimPrefix(unix.SignalName(sig.(unix.Signal)), "SIG")
				_ = link.Send(session.Frame{Type: session.FrameSignal, Data: []byte(name)})
			}
		}()
	}
	if ends.stdin != nil {
		go pumpStdin(link, ends.stdin, ends.tty == nil)
	}
	broken := make(chan error, 1)
	exited := make(chan struct{}) // the job's exit came: no more dialling
	go func() {
		// The error goes in before the link closes, so the Recv that
		// the close ends finds it: a refusal is reported as itself, not
		// as "session closed".
		err := connectLoop(ctx, c, ref, q, link, exited, ends.errw)
		broken <- err
		if err != nil {
			link.Close()
		}
	}()
	for {
		f, err := link.Recv()
		if err != nil {
			select {
			case cerr := <-broken:
				if cerr != nil {
					return cerr
				}
			default:
			}
			return fmt.Errorf("session of job %s: %w", ref, err)
		}
		switch f.Type {
		case session.FrameStdout:
			if _, err := ends.stdout.Write(f.Data); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		case session.FrameStderr:
			_, _ = ends.stderr.Write(f.Data)
		case session.FrameExit:
			close(exited)
			e, err := session.ExitOf(f)
			if err != nil {
				return err
			}
			link.WaitAcked() // the stub lets the session go once it knows we have it all
			if e.Error != "" && e.Code != 0 {
				fmt.Fprintf(ends.errw, "job %s: %s\n", ref, printable(e.Error))
			}
			if e.Code != 0 {
				return &exitStatus{code: e.Code}
			}
			return nil
		}
	}
}

// pumpStdin sends what the user types or pipes, and its end when eof
// says the end of input means the end of the job's input.
func pumpStdin(link *session.Link, in io.Reader, eof bool) {
	buf := make([]byte, session.MaxData)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if link.Send(session.Frame{Type: session.FrameStdin, Data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
		}
		if err != nil {
			if eof {
				_ = link.Send(session.Frame{Type: session.FrameStdinEOF})
			}
			return
		}
	}
}

// connectLoop serves link over a connection through one of the servers,
// and again through the next one whenever it breaks, until the link is
// closed; it returns an error when no server lets it attach for
// reconnectFor, or one refuses (a 4xx); its caller then closes the link.
// Once exited is closed it dials no more: the stub ends the connection
// when it knows we have the exit, which is no break to mend.
func connectLoop(ctx context.Context, c *client.Client, ref string, q client.SessionQuery, link *session.Link, exited <-chan struct{}, errw io.Writer) error {
	var failingSince time.Time
	backoff := 50 * time.Millisecond
	for {
		conn, err := c.Session(context.WithoutCancel(ctx), ref, q)
		if err != nil {
			var apiErr *client.APIError
			if errors.As(err, &apiErr) || errors.Is(err, session.ErrClosed) {
				return fmt.Errorf("attach to job %s: %w", ref, err)
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > reconnectFor {
				return fmt.Errorf("attach to job %s: no server let us back in for %s (the job keeps its session for its detach grace: netmgr attach %s): %w", ref, reconnectFor, ref, err)
			}
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		failingSince, backoff = time.Time{}, 50*time.Millisecond
		q.Event = "" // a reconnection is no new event
		if err := link.Serve(conn); errors.Is(err, session.ErrClosed) {
			return nil
		}
		select {
		case <-exited:
			return nil
		default:
		}
	}
}
