package ui

import (
	"net/http"
	"net/url"
	"slices"
)

// CORS lets a page served by one server of the group use another when its
// own server is gone (the page follows the event stream and the API to a
// surviving server). Only origins that are servers of the group pass:
// peers returns their API addresses (host:port). The session cookie goes
// along only where the browser holds it for that host (SameSite=Strict).
func CORS(peers func() []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !peerOrigin(origin, r.Host, peers) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Netmgr-Total-Count, X-Netmgr-Index, X-Netmgr-Leader")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
			h.Set("Access-Control-Allow-Headers", "Content-Type, "+CSRFHeader+", X-Netmgr-User")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// peerOrigin reports whether origin is this server or one of its peers.
func peerOrigin(origin, self string, peers func() []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return false
	}
	return u.Host == self || slices.Contains(peers(), u.Host)
}
