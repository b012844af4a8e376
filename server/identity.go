package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
	"github.com/netmgr/netmgr/server/ui"
)

// principal is who a request acts for, as this server verified it (or, in
// the insecure mode, as the request said).
type principal struct {
	// User is the person the request acts for; empty for a request a
	// stub or server makes on its own behalf.
	User string `json:"user,omitempty"`
	// Machine is the pool machine whose stub vouched for User: the user
	// called the stub's socket there. Root vouched for by a pool machine
	// administers the pool.
	Machine string `json:"machine,omitempty"`
	// Stub is the machine whose stub certificate made the request, when
	// the stub acts on its own behalf (CHILD events, lease renewals).
	Stub string `json:"stub,omitempty"`
	// Server is set when a server made the request on its own behalf.
	Server string `json:"server,omitempty"`
	// Via says how the identity was proved, for logs and refusals.
	Via string `json:"via,omitempty"`
	// Insecure is set in the insecure mode, where nothing is proved.
	Insecure bool `json:"insecure,omitempty"`
	// Forwarded is set when a follower forwarded the request (with a
	// server certificate, or the forwarded header in the insecure mode):
	// the per-user limits counted it there. It never travels in the
	// forwarded principal, so no caller can claim it.
	Forwarded bool `json:"-"`
}

// poolRoot reports whether p is root on a machine of the pool, who may
// administer it and (where the database allows) run jobs as root.
func (p principal) poolRoot() bool {
	return p.User == "root" && (p.Machine != "" || p.Insecure)
}

// String names p for logs: "alice (token tk12ab34)".
func (p principal) String() string {
	switch {
	case p.User != "":
		return p.User + " (" + p.Via + ")"
	case p.Stub != "":
		return "stub " + p.Stub
	case p.Server != "":
		return "server " + p.Server
	}
	return "anonymous"
}

// denial is a refused request: the status, the reason counted in
// netmgr_requests_denied_total, and what to tell the caller.
type denial struct {
	status int
	reason string
	err    error
}

// Reasons a request is refused, the label of netmgr_requests_denied_total.
const (
	denyNoCredentials = "no_credentials"
	denyBadToken      = "bad_token"
	denyExpiredToken  = "expired_token"
	denyWrongRole     = "wrong_role"
	denyWrongMachine  = "wrong_machine"
	denyNotPermitted  = "not_permitted"
	denyRootJob       = "root_job"
	denyRogueServer   = "rogue_server"
	denyCSRF          = "csrf"
)

// errNoCredentials is the refusal of a request that proves nobody.
var errNoCredentials = errors.New("no client certificate or token: run netexec on a pool machine, or set NETMGR_TOKEN to a token from `netmgr token create` (or NETMGR_CLIENT_CERT and NETMGR_CLIENT_KEY to a client certificate)")

// principalKey is the request context key of the verified principal.
type principalKey struct{}

// principalOf returns the principal authenticate verified for r.
func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// identify works out who r acts for. With TLS only proofs count: a client
// certificate names its user; a stub's certificate acts for its machine,
// or vouches for the user its socket's caller runs as; a server's
// certificate acts for itself or passes on what it verified when it
// forwards; a bearer token names its user. Without TLS the request is
// whoever X-Netmgr-User says.
func (s *Server) identify(r *http.Request) (principal, *denial) {
	if s.cfg.TLS == nil {
		u := r.Header.Get(client.UserHeader)
		if u == "" {
			u = "nobody"
		}
		return principal{User: u, Via: "header, insecure", Insecure: true, Forwarded: r.Header.Get(forwardedHeader) != ""}, nil
	}
	peer, hasCert := pki.PeerIdentity(r.TLS)
	if !hasCert {
		return s.identifyToken(r)
	}
	switch peer.Role {
	case pki.RoleClient:
		return principal{User: peer.Name, Via: "client certificate"}, nil
	case pki.RoleStub:
		if u := r.Header.Get(client.VouchedUserHeader); u != "" {
			return principal{User: u, Machine: peer.Name, Via: "local user of " + peer.Name}, nil
		}
		return principal{Stub: peer.Name, Via: "stub certificate"}, nil
	case pki.RoleServer:
		if h := r.Header.Get(client.ForwardedPrincipalHeader); h != "" {
			var p principal
			if err := json.Unmarshal([]byte(h), &p); err != nil {
				return principal{}, &denial{http.StatusBadRequest, denyWrongRole, fmt.Errorf("forwarded principal from server %s: %w", peer.Name, err)}
			}
			p.Forwarded = true
			return p, nil
		}
		return principal{Server: peer.Name, Via: "server certificate"}, nil
	}
	return principal{}, &denial{http.StatusForbidden, denyWrongRole, fmt.Errorf("certificate of %s: %w", peer, pki.ErrWrongRole)}
}

// identifyToken checks the bearer token of a request that came without a
// certificate.
func (s *Server) identifyToken(r *http.Request) (principal, *denial) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	via := "token "
	if auth == "" {
		// The dashboard's session cookie holds its token (server/ui). A
		// request that changes state must come from the page itself.
		if token, ok = ui.TokenFromCookie(r); ok {
			via = "dashboard, token "
			if !ui.SafeMethod(r.Method) && r.Header.Get(ui.CSRFHeader) == "" {
				return principal{}, &denial{http.StatusForbidden, denyCSRF, ui.ErrNoCSRFHeader}
			}
		}
	}
	if !ok || token == "" {
		return principal{}, &denial{http.StatusUnauthorized, denyNoCredentials, errNoCredentials}
	}
	user, err := s.tokenUser(strings.TrimSpace(token), time.Now())
	switch {
	case errors.Is(err, errTokenExpired):
		return principal{}, &denial{http.StatusUnauthorized, denyExpiredToken, err}
	case err != nil:
		return principal{}, &denial{http.StatusUnauthorized, denyBadToken, err}
	}
	id, _ := parseToken(strings.TrimSpace(token)) // tokenUser has checked it
	return principal{User: user, Via: via + id}, nil
}

// authenticated runs h with the request's verified principal in its
// context, or refuses the request.
func (s *Server) authenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, d := s.identify(r)
		if d != nil && !(d.reason == denyNoCredentials && r.URL.Path == "/v1/health") && !uiPublic(r) {
			s.deny(w, r, p, d)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// deny refuses r: it answers with the status and why, logs who asked what
// and why not, and counts the refusal by reason.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, p principal, d *denial) {
	peer := "no certificate"
	if id, ok := pki.PeerIdentity(r.TLS); ok {
		peer = id.String()
	}
	s.log.Warn("request denied", "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr,
		"peer", peer, "as", p.String(), "reason", d.reason, "err", d.err)
	s.metrics.denied(d.reason)
	if d.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="netmgr"`)
	}
	s.writeError(w, d.status, d.err)
}

// requireUser answers 401 unless the request acts for a user, and
// returns the principal when it does.
func (s *Server) requireUser(w http.ResponseWriter, r *http.Request) (principal, bool) {
	p := principalOf(r)
	if p.User == "" {
		s.deny(w, r, p, &denial{http.StatusForbidden, denyWrongRole,
			fmt.Errorf("%s %s acts for a user: %s is not one (%w)", r.Method, r.URL.Path, p, errPermission)})
		return p, false
	}
	return p, true
}

// forUser runs h only for a request that acts for a user.
func (s *Server) forUser(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.requireUser(w, r); ok {
			h(w, r)
		}
	}
}

// requireStub answers 403 unless the request comes from the stub of
// machine (any stub when machine is empty), and returns the stub's
// machine when it does.
func (s *Server) requireStub(w http.ResponseWriter, r *http.Request, machine string) (string, bool) {
	p := principalOf(r)
	switch {
	case p.Insecure:
		return machine, true
	case p.Stub == "":
		s.deny(w, r, p, &denial{http.StatusForbidden, denyWrongRole,
			fmt.Errorf("%s %s is for stubs: %s holds no stub certificate (%w)", r.Method, r.URL.Path, p, errPermission)})
		return "", false
	case machine != "" && p.Stub != machine:
		s.deny(w, r, p, &denial{http.StatusForbidden, denyWrongMachine,
			fmt.Errorf("%s %s for machine %s: the certificate is machine %s's (%w)", r.Method, r.URL.Path, machine, p.Stub, errPermission)})
		return "", false
	}
	return p.Stub, true
}

// forwardPrincipal sets on req, which this server passes to the leader,
// the principal it verified for the original request.
func forwardPrincipal(req *http.Request, p principal) {
	req.Header.Del(client.VouchedUserHeader)
	data, err := json.Marshal(p)
	if err != nil {
		return // a principal of strings always encodes
	}
	req.Header.Set(client.ForwardedPrincipalHeader, string(data))
}
