package client

import (
	"context"
	"net"
	"net/http"
	"time"
)

// SocketHost is the host name of requests sent over a stub's Unix socket
// (WithUnixSocket); the stub passes them on to the servers.
const SocketHost = "netmgr-stub"

// WithUnixSocket sends every request over the Unix socket at path, the
// socket on which a pool machine's stub takes its users' requests and
// vouches for them to the servers.
func WithUnixSocket(path string) Option {
	return func(c *Client) {
		t := newTransport()
		var d net.Dialer
		t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
		c.hc = &http.Client{Timeout: 70 * time.Second, Transport: t}
		c.socket, c.socketPath = true, path
	}
}
