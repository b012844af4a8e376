package server

import (
	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// stubClient is a client for the stub of machine at addr. With TLS, the
// certificate there must be machine's stub certificate: a process that
// claims a machine's name in gossip without holding its certificate gets
// no Start, Signal or facts request.
func (s *Server) stubClient(machine, addr string) (*client.StubClient, error) {
	opts := []client.Option{client.WithHTTPClient(s.hc)}
	if s.cfg.TLS != nil {
		opts = append(opts, client.WithHTTPS(), client.ExpectPeer(pki.Identity{Role: pki.RoleStub, Name: machine}))
	}
	return client.NewStub(addr, opts...)
}
