package stub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/internal/promtext"
)

// relayDialTimeout bounds connecting to one server, so a server cut off by
// a partition costs only this much before the next is tried.
const relayDialTimeout = 5 * time.Second

// maxRelayBlob bounds the body of a PUT /v1/blobs (a job's copy_in
// files) the relay passes on; the servers' --max-copy-size is the real
// limit, and answers with it.
const maxRelayBlob = 1 << 30

// relay passes the requests of the machine's users on to the servers, as
// the user the kernel says called, and streams the answers back.
type relay struct {
	machine string
	servers *serverList
	hc      *http.Client
	scheme  string // of server addresses given without one
	secure  bool   // TLS: vouch with VouchedUserHeader; else the insecure UserHeader
	log     *slog.Logger
	lookup  func(uid int) (string, error)
	denied  *promtext.CounterVec // refusals by reason, the stub's netmgr_requests_denied_total

	mu        sync.Mutex // guards preferred
	preferred string     // the server address that answered last
}

// newRelay makes the relay of machine's user socket: with m (the stub's
// certificate) it reaches the servers over TLS and vouches for each
// caller; without it (the insecure mode) it says who calls in the header
// insecure servers believe.
func newRelay(machine string, servers *serverList, m *pki.Material, log *slog.Logger, denied *promtext.CounterVec) *relay {
	r := &relay{machine: machine, servers: servers, log: log, lookup: userName, scheme: "http://", denied: denied}
	var t *http.Transport
	if m != nil {
		t = client.NewTLSTransport(m, pki.RoleServer)
		dialTLS := t.DialTLSContext
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, relayDialTimeout)
			defer cancel()
			return dialTLS(ctx, network, addr)
		}
		r.scheme, r.secure = "https://", true
	} else {
		t = http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.DialContext = (&net.Dialer{Timeout: relayDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	t.MaxIdleConnsPerHost = 16
	// No overall timeout: a followed event stream lasts as long as its
	// caller listens, and the caller's going cancels the request. The
	// client follows a follower's 307 to the leader, headers and all.
	r.hc = &http.Client{Transport: t}
	return r
}

// userName is the name of the user with uid on this machine.
func userName(uid int) (string, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", fmt.Errorf("look up uid %d: %w", uid, err)
	}
	if u.Username == "" {
		return "", fmt.Errorf("look up uid %d: the user has no name", uid)
	}
	return u.Username, nil
}

// hopHeaders are the headers of one connection, never passed on.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// identityHeaders are the headers that could say who a request acts for:
// a caller of the socket never sets them; the stub alone does.
var identityHeaders = []string{
	"Authorization", client.UserHeader, client.VouchedUserHeader, client.ForwardedPrincipalHeader,
}

// ServeHTTP passes one request of a local user on to a server, as that
// user, and streams the answer back.
func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	caller := callerOf(req)
	if caller.err != nil {
		r.refuse(w, req, caller, http.StatusForbidden, "no_peer_credentials", fmt.Errorf("machine %s cannot tell who you are: %w", r.machine, caller.err))
		return
	}
	name, err := r.lookup(caller.uid)
	if err != nil {
		r.refuse(w, req, caller, http.StatusForbidden, "unnamed_uid", fmt.Errorf("uid %d has no user name on machine %s, and the servers know users by name: %w", caller.uid, r.machine, err))
		return
	}
	if strings.EqualFold(req.Header.Get("Upgrade"), client.SessionUpgrade) {
		r.relaySession(w, req, name)
		return
	}
	limit := int64(maxBody)
	if req.Method == http.MethodPut && strings.HasPrefix(req.URL.Path, "/v1/blobs/") {
		limit = maxRelayBlob // a job's files: the servers enforce their own limit
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			r.refuse(w, req, caller, http.StatusRequestEntityTooLarge, "", fmt.Errorf("request body over %d bytes", limit))
			return
		}
		writeError(w, http.StatusBadRequest, fmt.Errorf("read request: %w", err))
		return
	}
	addrs := r.order(r.servers.addrs())
	if len(addrs) == 0 {
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("machine %s knows no server yet: its stub is still joining the pool", r.machine))
		return
	}
	var last error
	for _, addr := range addrs {
		out, err := r.outgoing(req, addr, name, body)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		resp, err := r.hc.Do(out)
		if err != nil {
			if req.Context().Err() != nil {
				return // the caller went away
			}
			last = err
			continue
		}
		r.setPreferred(addr)
		r.answer(w, resp)
		return
	}
	r.log.Warn("user socket: no server answered", "user", name, "method", req.Method, "path", req.URL.Path, "tried", addrs, "err", last)
	writeError(w, http.StatusBadGateway, fmt.Errorf("no server answered machine %s (tried %s): %w", r.machine, strings.Join(addrs, ", "), last))
}

// relaySession passes an interactive session's upgrade on to the first
// server that answers, as user name, and copies the connection's bytes
// both ways once both hops are upgraded.
func (r *relay) relaySession(w http.ResponseWriter, req *http.Request, name string) {
	var last error
	addrs := r.order(r.servers.addrs())
	for _, addr := range addrs {
		out, err := r.outgoing(req, addr, name, nil)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		t, _ := r.hc.Transport.(*http.Transport)
		up, err := client.DialUpgrade(req.Context(), t, out.URL.String(), out.Header, nil)
		var apiErr *client.APIError
		if errors.As(err, &apiErr) {
			writeError(w, apiErr.Status, errors.New(apiErr.Message))
			return
		}
		if err != nil {
			last = err
			continue
		}
		r.setPreferred(addr)
		conn, err := client.AcceptUpgrade(w)
		if err != nil {
			_ = up.Close()
			return
		}
		client.Splice(conn, up)
		return
	}
	writeError(w, http.StatusBadGateway, fmt.Errorf("no server answered machine %s (tried %s): %w", r.machine, strings.Join(addrs, ", "), last))
}

// outgoing builds the request to the server at addr that acts for user.
func (r *relay) outgoing(in *http.Request, addr, name string, body []byte) (*http.Request, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = r.scheme + base
	}
	u := strings.TrimRight(base, "/") + in.URL.RequestURI()
	out, err := http.NewRequestWithContext(in.Context(), in.Method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("pass %s %s on: %w", in.Method, in.URL.Path, err)
	}
	out.Header = in.Header.Clone()
	stripHop(out.Header)
	for _, h := range identityHeaders {
		out.Header.Del(h)
	}
	if r.secure {
		out.Header.Set(client.VouchedUserHeader, name)
	} else {
		out.Header.Set(client.UserHeader, name)
	}
	return out, nil
}

// answer streams resp back to the caller, flushing as it comes, so an
// event stream or a long poll reaches the caller as the server writes it.
func (r *relay) answer(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	stripHop(h)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the caller went away
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return // the end
		}
		if err != nil {
			// The server went, or broke the stream: the caller sees it
			// break too, not end as if complete.
			panic(http.ErrAbortHandler)
		}
	}
}

// refuse answers a call the stub will not pass on, logs it and, when the
// refusal is about who called (reason), counts it.
func (r *relay) refuse(w http.ResponseWriter, req *http.Request, caller peerCred, status int, reason string, err error) {
	r.log.Warn("user socket: request refused", "method", req.Method, "path", req.URL.Path,
		"uid", caller.uid, "pid", caller.pid, "status", status, "err", err)
	if reason != "" && r.denied != nil {
		r.denied.WithLabelValues(reason).Inc()
	}
	writeError(w, status, err)
}

// order puts the server that answered last first.
func (r *relay) order(addrs []string) []string {
	r.mu.Lock()
	pref := r.preferred
	r.mu.Unlock()
	for i, a := range addrs {
		if a == pref {
			return append(append([]string(nil), addrs[i:]...), addrs[:i]...)
		}
	}
	return addrs
}

func (r *relay) setPreferred(addr string) {
	r.mu.Lock()
	r.preferred = addr
	r.mu.Unlock()
}

// close drops the relay's idle connections to the servers.
func (r *relay) close() { r.hc.CloseIdleConnections() }

// stripHop removes the headers of one connection from h, those the
// Connection header names among them.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
