package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Cookie is the name of the cookie that holds a signed-in page's API
// token. It is HttpOnly (the page's scripts never see the token), Secure
// and SameSite=Strict (no other site's page makes the browser send it).
const Cookie = "netmgr_session"

// CSRFHeader is the header every state-changing request from the page
// carries. A form or another site's script cannot set it without a CORS
// preflight, which only the servers' own pages pass (CORS), so a request
// that carries the cookie but not the header did not come from the page.
const CSRFHeader = "X-Netmgr-Dashboard"

// ErrNoCSRFHeader refuses a state-changing request that carries the
// session cookie but not CSRFHeader.
var ErrNoCSRFHeader = errors.New("a dashboard request that changes state must carry the header " + CSRFHeader + ": 1 (sent by the dashboard page itself); requests from other pages are refused")

// SafeMethod reports whether method only reads, so that a request by it
// needs no CSRF header.
func SafeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// TokenFromCookie returns the API token a request's session cookie
// holds, if any.
func TokenFromCookie(r *http.Request) (string, bool) {
	c, err := r.Cookie(Cookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

// Sessions signs pages in and out.
type Sessions struct {
	// Verify checks an API token as the server checks a bearer token and
	// returns the user it names.
	Verify func(token string) (user string, err error)
	// Secure marks the cookie Secure; set when the API is served over TLS.
	Secure bool
	// Insecure is set when the server runs without TLS, where identity is
	// whatever X-Netmgr-User says and tokens are not checked.
	Insecure bool
}

// loginRequest is the body of POST /ui/login.
type loginRequest struct {
	Token string `json:"token"`
}

// Identity is the answer of POST /ui/login and GET /ui/whoami.
type Identity struct {
	User     string `json:"user"`
	Via      string `json:"via,omitempty"`
	Insecure bool   `json:"insecure,omitempty"`
}

// Login answers POST /ui/login {"token": "..."}: it checks the token as
// the API checks a bearer token and, when it is good, sets the session
// cookie. A bad token is refused with 401 and what to do.
func (s *Sessions) Login(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(CSRFHeader) == "" {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "sign in: " + ErrNoCSRFHeader.Error()})
		return
	}
	if s.Insecure {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "sign in: this server runs without TLS (--insecure), where tokens are not used; the page names its user in X-Netmgr-User instead"})
		return
	}
	var req loginRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10))
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("sign in: read request: %v", err)})
		return
	}
	token := strings.TrimSpace(req.Token)
	user, err := s.Verify(token)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="netmgr"`)
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: fmt.Sprintf("sign in: %v; an admin issues a token with `netmgr token create --user NAME`", err)})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: Cookie, Value: token, Path: "/",
		HttpOnly: true, Secure: s.Secure, SameSite: http.SameSiteStrictMode,
	})
	writeJSON(w, http.StatusOK, Identity{User: user, Via: "token"})
}

// Logout answers POST /ui/logout: it clears the session cookie. The token
// itself stays valid until it expires or an admin revokes it.
func (s *Sessions) Logout(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(CSRFHeader) == "" {
		writeJSON(w, http.StatusForbidden, errorBody{Error: "sign out: " + ErrNoCSRFHeader.Error()})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: Cookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.Secure, SameSite: http.SameSiteStrictMode,
	})
	w.WriteHeader(http.StatusNoContent)
}

// errorBody is an error answer, as the API's.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteJSON answers with v as JSON, for the server's /ui handlers.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }
