package server

import (
	"errors"
	"fmt"
)

// Reload reads the server's TLS material and gossip keyring files again,
// as `netmgr server` does on SIGHUP. A renewed certificate or CA serves
// every connection made from then on (the API, Raft, calls to stubs and
// peers); connections already open keep theirs. The gossip keyring is
// made to hold exactly the file's keys, encrypting with the first
// (pki.InstallKeys). What changed is logged. On an error the material or
// keys in use stay, and the error names the file. Safe for concurrent
// use.
func (s *Server) Reload() error {
	var errs []error
	if m := s.cfg.TLS; m != nil {
		if err := m.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("reload TLS material: %w", err))
		} else {
			s.log.Info("TLS material reloaded", "identity", m.Self().String(), "expires", m.NotAfter())
		}
	}
	if s.cfg.GossipKeyring != "" {
		if err := s.gossip.ml.ReloadKeyring(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Error("reload failed; keeping what is in use", "err", err)
		return err
	}
	return nil
}
