package server

import (
	"context"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/mail"
)

// startMailSender starts sending the group's pending mail until ctx ends
// (server/mail); it does nothing on a server with no mail configuration
// but warn of what is pending. The leader loop does not wait for it: a
// send in progress when leadership is lost may take until the relay
// answers (at most the mail timeout), and its outcome is then left for
// the next leader. Shutdown waits for it.
func (s *Server) startMailSender(ctx context.Context) {
	if s.mailer == nil {
		s.fsm.Read(func(v fsm.View) {
			if n := v.PendingMailCount(); n > 0 {
				s.log.Warn("mail is pending but this server has no mail configuration (--smtp or --sendmail)", "pending", n)
			}
		})
		return
	}
	ms := mail.New(dutyHandle{s}, s.mailer, mail.Config{
		Retry: s.cfg.MailRetry, Tick: leaderTick, Sent: s.metrics.mailsSent, Failed: s.metrics.mailFailures,
	})
	s.goFunc(func() { ms.Run(ctx) })
}
