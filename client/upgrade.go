package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// SessionUpgrade is the protocol of the HTTP upgrade that turns a request
// into an interactive session's connection (package client/session), on
// every hop: client to server, server to stub, and through a stub's user
// socket.
const SessionUpgrade = "netmgr-session"

// LeaseUpgrade is the protocol of the HTTP upgrade that turns a request
// for LeaseStreamPath into a lease stream's connection: the renewals and
// answers, a JSON line each, go on it bare.
const LeaseUpgrade = "netmgr-lease"

// upgradeTimeout bounds dialing and the upgrade's answer.
const upgradeTimeout = 10 * time.Second

// DialUpgrade sends GET rawURL with header over a connection of its own,
// made as t makes its connections (its dialer, and its TLS configuration
// limited to HTTP/1.1, which alone can upgrade), and returns the
// connection once the answer is 101 Switching Protocols to
// SessionUpgrade. Any other answer is an error: an *APIError for a 4xx
// (with the answer's message), a retryable error for a 5xx. With expect,
// a TLS peer's certificate must name it (ErrWrongPeer).
func DialUpgrade(ctx context.Context, t *http.Transport, rawURL string, header http.Header, expect *pki.Identity) (net.Conn, error) {
	return DialUpgradeTo(ctx, t, http.MethodGet, rawURL, header, expect, SessionUpgrade)
}

// HandshakeWatcher is a connection a transport's DialContext may return
// to learn when DialUpgradeTo's TLS handshake on it ended, done or not:
// the simulator (stub/simpool) lets a few of its machines shake hands at
// once, as each real machine has a CPU of its own, and holds a slot from
// the dial to then.
type HandshakeWatcher interface {
	net.Conn
	HandshakeEnded()
}

// DialUpgradeTo is DialUpgrade with the request's method and the protocol
// to upgrade to, which also names the operation in errors.
func DialUpgradeTo(ctx context.Context, t *http.Transport, method, rawURL string, header http.Header, expect *pki.Identity, proto string) (net.Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &APIError{Message: fmt.Sprintf("%s: %s: %v", proto, rawURL, err)}
	}
	dctx, cancel := context.WithTimeout(ctx, upgradeTimeout)
	defer cancel()
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443"}[u.Scheme]+map[string]string{"http": "80"}[u.Scheme])
	}
	var raw net.Conn
	if t != nil && t.DialContext != nil {
		raw, err = t.DialContext(dctx, "tcp", host)
	} else {
		var d net.Dialer
		raw, err = d.DialContext(dctx, "tcp", host)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: dial %s: %w", proto, host, err)
	}
	conn := raw
	if u.Scheme == "https" {
		var cfg *tls.Config
		if t != nil && t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		} else {
			cfg = &tls.Config{MinVersion: tls.VersionTLS13}
		}
		cfg.NextProtos = []string{"http/1.1"}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname() // as http.Transport sets it
		}
		tc := tls.Client(raw, cfg)
		err := tc.HandshakeContext(dctx)
		if w, ok := raw.(HandshakeWatcher); ok {
			w.HandshakeEnded()
		}
		if err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("%s: tls handshake with %s: %w", proto, host, err)
		}
		if expect != nil {
			cs := tc.ConnectionState()
			if err := checkPeer(&cs, *expect, host); err != nil {
				_ = tc.Close()
				return nil, err
			}
		}
		conn = tc
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
	if err != nil {
		_ = conn.Close()
		return nil, &APIError{Message: fmt.Sprintf("%s: %v", proto, err)}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", proto)
	if dl, ok := dctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := req.Write(conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%s: send to %s: %w", proto, host, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%s: answer of %s: %w", proto, host, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		msg := strings.TrimSpace(string(data))
		var e ErrorResponse
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if resp.StatusCode >= 500 {
			return nil, &retryable{msg: fmt.Sprintf("%s: %s: %s", rawURL, resp.Status, msg)}
		}
		return nil, &APIError{Status: resp.StatusCode, Message: msg}
	}
	_ = conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: br}, nil
}

// AcceptUpgrade answers a request for SessionUpgrade with 101 Switching
// Protocols and returns its connection, whose deadlines it clears.
func AcceptUpgrade(w http.ResponseWriter) (net.Conn, error) {
	return AcceptUpgradeTo(w, SessionUpgrade)
}

// AcceptUpgradeTo is AcceptUpgrade for the protocol proto.
func AcceptUpgradeTo(w http.ResponseWriter, proto string) (net.Conn, error) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("%s upgrade: %w", proto, err)
	}
	_ = conn.SetDeadline(time.Time{})
	_, err = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+proto+"\r\n\r\n")
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("%s upgrade: %w", proto, err)
	}
	if brw != nil && brw.Reader.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: brw.Reader}, nil
	}
	return conn, nil
}

// bufferedConn reads what its reader buffered before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Splice copies a and b into each other until either side ends, then
// closes both.
func Splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

// SessionQuery names the instance (and attempt, 0 for its current one)
// whose session a client attaches to, and whether it opens a new shell
// in it instead (Shell, the command and a terminal size).
type SessionQuery struct {
	Instance int
	Attempt  uint64
	// Shell, when set, runs a command in the instance (netmgr shell):
	// Command (empty for the owner's login shell), with a terminal of
	// Rows by Cols when TTY is set.
	Shell bool
	// ID names the shell's session, chosen by the client, so that a
	// reconnection attaches to the same shell rather than start another.
	ID         string
	Command    []string
	TTY        bool
	Rows, Cols uint16
	// Event, on a client's first connection only, says what the server
	// records of it in the events: "opened" (netexec's session, a new
	// shell) or "attached" (netmgr attach); a reconnection leaves it
	// empty.
	Event string
}

func (q SessionQuery) query() string {
	v := url.Values{}
	v.Set("instance", strconv.Itoa(q.Instance))
	if q.Attempt > 0 {
		v.Set("attempt", strconv.FormatUint(q.Attempt, 10))
	}
	if q.Event != "" {
		v.Set("event", q.Event)
	}
	if q.Shell {
		v.Set("shell", "1")
		v.Set("sid", q.ID)
		for _, a := range q.Command {
			v.Add("cmd", a)
		}
		if q.TTY {
			v.Set("tty", fmt.Sprintf("%dx%d", q.Rows, q.Cols))
		}
	}
	return v.Encode()
}

// Session opens a connection to the session of job ref's instance
// through one of the servers (GET /v1/jobs/{ref}/session, upgraded),
// trying each once from the preferred one; the connection carries the
// session's link (package client/session). A refusal is an *APIError: 403
// for a user who neither owns the job nor administers the pool, 404 for
// an instance without a session.
func (c *Client) Session(ctx context.Context, ref string, q SessionQuery) (net.Conn, error) {
	t, _ := c.hc.Transport.(*http.Transport)
	addrs := c.Addrs()
	var last error
	for _, addr := range addrs {
		header := http.Header{}
		req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
		c.setIdentity(req)
		for k, v := range req.Header {
			header[k] = v
		}
		conn, err := DialUpgrade(ctx, t, addr+"/v1/jobs/"+url.PathEscape(ref)+"/session?"+q.query(), header, c.expect)
		var apiErr *APIError
		if err == nil {
			return conn, nil
		}
		if errors.As(err, &apiErr) && apiErr.Status != http.StatusServiceUnavailable && apiErr.Status != http.StatusBadGateway {
			return nil, err
		}
		last = err
	}
	return nil, &unreachableError{tried: addrs, last: last, stub: c.stub}
}
