package server

import (
	"context"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/mailer"
)

// Mail delivery. The state machine files pending mail as it applies the
// events a job or the admins are mailed about (fsm/mail.go); the leader
// sends it, one message at a time in index order, in a goroutine of its
// own, so that a slow or dead relay never holds up scheduling, and
// commits a MailSent for each outcome. A new leader finds what is still
// pending and sends it under the same Message-ID: a leader that dies after
// the relay took a message but before its MailSent committed causes one
// duplicate at most, which mail clients recognise by that ID.

// Retry timing for failed sends: the n-th retry waits the base
// (Config.MailRetry) doubled n-1 times, at most maxMailRetry, and a mail
// that failed maxMailAttempts times is given up (its MailSent says so).
const (
	defaultMailRetry = 5 * time.Second
	maxMailRetry     = 10 * time.Minute
	maxMailAttempts  = 12
)

// mailRetryDelay is how long after its last failed attempt a mail that
// failed attempts times is due again.
func mailRetryDelay(base time.Duration, attempts int) time.Duration {
	if attempts <= 0 {
		return 0
	}
	return min(base<<min(attempts-1, 20), maxMailRetry)
}

// mailSender is one leader term's mail goroutine.
type mailSender struct{ s *Server }

// startMailSender starts sending the group's pending mail until ctx ends;
// it does nothing on a server with no mail configuration. The leader loop
// does not wait for it: a send in progress when leadership is lost may
// take until the relay answers (at most the mail timeout), and its outcome
// is then left for the next leader. Shutdown waits for it.
func (s *Server) startMailSender(ctx context.Context) {
	if s.mailer == nil {
		s.fsm.Read(func(v fsm.View) {
			if n := v.PendingMailCount(); n > 0 {
				s.log.Warn("mail is pending but this server has no mail configuration (--smtp or --sendmail)", "pending", n)
			}
		})
		return
	}
	ms := &mailSender{s: s}
	s.goFunc(func() { ms.run(ctx) })
}

// run sends what is due, then sleeps until the state changes, the next
// retry is due or a tick passes (the group may have reached the command
// level MailSent needs).
func (ms *mailSender) run(ctx context.Context) {
	s := ms.s
	for ctx.Err() == nil {
		_, changed := s.fsm.Watch()
		next := leaderTick * 4
		if s.groupApplies(fsm.MailSentType) {
			m, wait := ms.due(time.Now())
			if m != nil {
				ms.send(ctx, m)
				continue
			}
			if wait > 0 {
				next = min(next, wait)
			}
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// due returns a copy of the oldest pending mail due at now, or, when
// none is, how long until the first one is (0: none pending).
func (ms *mailSender) due(now time.Time) (*fsm.Mail, time.Duration) {
	var out *fsm.Mail
	var wait time.Duration
	base := ms.s.mailRetry()
	ms.s.fsm.Read(func(v fsm.View) {
		for _, m := range v.PendingMail() {
			at := m.LastTry.Add(mailRetryDelay(base, m.Attempts))
			if m.Attempts == 0 || !now.Before(at) {
				c := fsm.CopyMail(m)
				out = &c
				return
			}
			if d := at.Sub(now); wait == 0 || d < wait {
				wait = d
			}
		}
	})
	return out, wait
}

// send delivers m and commits the outcome.
func (ms *mailSender) send(ctx context.Context, m *fsm.Mail) {
	s := ms.s
	err := s.mailer.Send(ctx, mailer.Message{ID: m.ID, To: m.To, Subject: m.Subject, Body: m.Body, Date: m.At})
	if ctx.Err() != nil {
		return // leadership lost or stopping: the next leader sends it
	}
	rec := fsm.MailSent{At: time.Now().UTC(), ID: m.ID}
	if err != nil {
		s.metrics.mailFailed()
		rec.Error = err.Error()
		rec.GaveUp = m.Attempts+1 >= maxMailAttempts
		s.log.Warn("send mail failed", "mail", m.ID, "attempt", m.Attempts+1, "gave_up", rec.GaveUp, "err", err)
	} else {
		s.metrics.mailSent()
		s.log.Info("mail sent", "mail", m.ID, "to", m.To, "message_id", s.mailer.MessageID(m.ID))
	}
	if _, err := s.apply(fsm.MailSentType, rec); err != nil {
		s.log.Warn("record mail outcome failed", "mail", m.ID, "err", err)
		select { // not leader, or Raft busy: do not spin
		case <-ctx.Done():
		case <-time.After(leaderTick):
		}
	}
}

// mailRetry is the base delay of mail retries.
func (s *Server) mailRetry() time.Duration {
	if s.cfg.MailRetry > 0 {
		return s.cfg.MailRetry
	}
	return defaultMailRetry
}
