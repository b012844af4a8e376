package stub

import (
	"errors"
	"fmt"
)

// Reload reads the stub's TLS material and gossip keyring files again,
// as `netmgr stub` does on SIGHUP, and ends a drain for a failed prologue
// or epilogue (the admin has seen to it). A renewed certificate or CA serves
// every connection made from then on (the API, calls to the servers and
// other stubs); connections already open keep theirs. The gossip keyring
// is made to hold exactly the file's keys, encrypting with the first
// (pki.InstallKeys). What changed is logged. On an error the material or
// keys in use stay, and the error names the file. Safe for concurrent
// use.
func (s *Stub) Reload() error {
	if was := s.health.clearScript(); was != "" {
		s.log.Info("reload: the machine takes work again after its failed script", "was", was)
	}
	var errs []error
	if m := s.cfg.TLS; m != nil {
		if err := m.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("reload TLS material: %w", err))
		} else {
			s.log.Info("TLS material reloaded", "identity", m.Self().String(), "expires", m.NotAfter())
		}
	}
	if s.cfg.GossipKeyring != "" && s.gossip != nil {
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
