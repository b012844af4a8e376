package mail

import (
	"context"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty"
	"github.com/netmgr/netmgr/server/mailer"
)

// Retry timing for failed sends: the n-th retry waits the base
// (Config.Retry) doubled n-1 times, at most maxRetry, and a mail that
// failed maxAttempts times is given up (its MailSent says so).
const (
	// DefaultRetry is the base of the retry backoff when none is set.
	DefaultRetry = 5 * time.Second
	maxRetry     = 10 * time.Minute
	maxAttempts  = 12
)

// retryDelay is how long after its last failed attempt a mail that
// failed attempts times is due again.
func retryDelay(base time.Duration, attempts int) time.Duration {
	if attempts <= 0 {
		return 0
	}
	return min(base<<min(attempts-1, 20), maxRetry)
}

// Config is what a Sender is given besides its handle and mailer.
type Config struct {
	// Retry is the delay before the first retry of a failed send;
	// DefaultRetry when zero.
	Retry time.Duration
	// Tick is the leader loop's tick: the sender looks again at least
	// every 4 ticks (the group may have reached the command level
	// MailSent needs), and waits a tick after a failed commit.
	Tick time.Duration
	// Sent and Failed count the sends handed to the relay and those
	// that failed.
	Sent, Failed *promtext.Counter
}

// Sender is one leader term's mail goroutine.
type Sender struct {
	h   duty.Handle
	m   *mailer.Mailer
	cfg Config
}

// New returns the mail duty of a leader term, sending through m.
func New(h duty.Handle, m *mailer.Mailer, cfg Config) *Sender {
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	return &Sender{h: h, m: m, cfg: cfg}
}

// Run sends what is due, then sleeps until the state changes, the next
// retry is due or a tick passes, until ctx ends. A send in progress when
// ctx ends may take until the relay answers (at most the mail timeout);
// its outcome is then left for the next leader.
func (ms *Sender) Run(ctx context.Context) {
	for ctx.Err() == nil {
		_, changed := ms.h.Watch()
		next := ms.cfg.Tick * 4
		if ms.h.Applies(fsm.MailSentType) {
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
func (ms *Sender) due(now time.Time) (*fsm.Mail, time.Duration) {
	var out *fsm.Mail
	var wait time.Duration
	ms.h.Read(func(v fsm.View) {
		for _, m := range v.PendingMail() {
			at := m.LastTry.Add(retryDelay(ms.cfg.Retry, m.Attempts))
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
func (ms *Sender) send(ctx context.Context, m *fsm.Mail) {
	log := ms.h.Log()
	err := ms.m.Send(ctx, mailer.Message{ID: m.ID, To: m.To, Subject: m.Subject, Body: m.Body, Date: m.At})
	if ctx.Err() != nil {
		return // leadership lost or stopping: the next leader sends it
	}
	rec := fsm.MailSent{At: time.Now().UTC(), ID: m.ID}
	if err != nil {
		ms.cfg.Failed.Inc()
		rec.Error = err.Error()
		rec.GaveUp = m.Attempts+1 >= maxAttempts
		log.Warn("send mail failed", "mail", m.ID, "attempt", m.Attempts+1, "gave_up", rec.GaveUp, "err", err)
	} else {
		ms.cfg.Sent.Inc()
		log.Info("mail sent", "mail", m.ID, "to", m.To, "message_id", ms.m.MessageID(m.ID))
	}
	if _, err := ms.h.Apply(fsm.MailSentType, rec); err != nil {
		log.Warn("record mail outcome failed", "mail", m.ID, "err", err)
		select { // not leader, or Raft busy: do not spin
		case <-ctx.Done():
		case <-time.After(ms.cfg.Tick):
		}
	}
}
