package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// ErrWrongPeer means the certificate at an address names someone other
// than the peer the caller meant (a stub answering for another machine).
var ErrWrongPeer = errors.New("wrong peer")

// WithHTTPS makes addresses given without a scheme https:// ones.
func WithHTTPS() Option { return func(c *Client) { c.scheme = "https://" } }

// WithTLS talks TLS to the servers: their certificates must be server
// certificates of m's CA, and m's own certificate, if any, goes along.
func WithTLS(m *pki.Material) Option {
	return func(c *Client) {
		c.hc = &http.Client{Timeout: 70 * time.Second, Transport: NewTLSTransport(m, pki.RoleServer)}
		c.scheme = "https://"
	}
}

// WithToken sends token as "Authorization: Bearer" with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// ExpectPeer makes every request check that the certificate of the peer
// that answers names id; a connection to anyone else is closed before the
// request is sent (ErrWrongPeer).
func ExpectPeer(id pki.Identity) Option { return func(c *Client) { c.expect = &id } }

// expectKey carries the identity a request's peer must have to
// NewTLSTransport's dialer.
type expectKey struct{}

// NewTLSTransport is a pooled HTTP transport over TLS whose peers must
// hold certificates of m's CA with one of the roles want. A request whose
// context carries an expected identity (ExpectPeer) is only sent over a
// connection to that peer.
func NewTLSTransport(m *pki.Material, want ...pki.Role) *http.Transport {
	t := newTransport()
	cfg := m.ClientConfig(want...)
	t.TLSClientConfig = cfg
	var d net.Dialer
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn := tls.Client(raw, cfg)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		if want, ok := ctx.Value(expectKey{}).(pki.Identity); ok {
			cs := conn.ConnectionState()
			if err := checkPeer(&cs, want, addr); err != nil {
				conn.Close()
				return nil, err
			}
		}
		return conn, nil
	}
	return t
}

// checkPeer returns ErrWrongPeer unless the leaf certificate of cs names
// want. The chain was verified in the handshake.
func checkPeer(cs *tls.ConnectionState, want pki.Identity, addr string) error {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%s: %w: want %s, got no certificate", addr, ErrWrongPeer, want)
	}
	got, err := pki.IdentityOf(cs.PeerCertificates[0])
	if err != nil {
		return fmt.Errorf("%s: %w: %v", addr, ErrWrongPeer, err)
	}
	if got != want {
		return fmt.Errorf("%s: %w: want %s, the certificate there is %s's", addr, ErrWrongPeer, want, got)
	}
	return nil
}

// WithVouchedUser sends user as VouchedUserHeader with every request, as
// a stub does for the callers of its socket. Servers believe it only over
// a connection with a stub certificate (WithTLS with a stub's material).
func WithVouchedUser(user string) Option { return func(c *Client) { c.vouched = user } }
