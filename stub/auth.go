package stub

import (
	"fmt"
	"net/http"

	"github.com/netmgr/netmgr/client/pki"
)

// only runs h for callers whose certificate has one of roles, and refuses
// the others with 403, a log line and a count. The listener has already
// refused callers without a certificate of the cluster's CA. In the
// insecure mode (no TLS) everyone passes.
func (s *Stub) only(h http.HandlerFunc, roles ...pki.Role) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.TLS == nil {
			h(w, r)
			return
		}
		id, err := pki.CheckPeer(r.TLS, roles...)
		if err != nil {
			s.log.Warn("request denied", "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr, "peer", id.String(), "err", err)
			s.metrics.denied.WithLabelValues("wrong_role").Inc()
			writeError(w, http.StatusForbidden, fmt.Errorf("%s %s: %w (only %v certificates may)", r.Method, r.URL.Path, err, roles))
			return
		}
		h(w, r)
	}
}
