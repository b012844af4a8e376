// Package mailer delivers netmgr's mail: plain-text messages with a
// Message-ID the caller chooses, through an SMTP relay (STARTTLS and
// authentication as configured) or a local sendmail program, using the
// go-mail library. It knows nothing of the database: the server's leader
// hands it what the log says is pending and records the outcome.
//
// # Mail
//
// Mail is decided by the state machine and sent by the leader (fsm/mail.go,
// server/mail, server/mailer).
//
// *Filing.* While an entry is applied, the changes that call for mail are
// noted: an instance's first start (begin), an instance queued again after
// an attempt ended (requeue, in newAttempt), a job whose last instance
// finished (refreshDone), a machine leaving the pool and the instances lost
// with it (applyStubLeave), a server removed (applyServerRemoved). At the
// end of the entry, after flushEnded has decided the dependents, flushMail
// turns the notes into pending Mail records: end or fail (a failed or
// cancelled job, when the job asked for fail) for each job still ended (an
// instance restarted in the same entry makes the job run again, so no end
// mail), job-failed to the admins for a failed job with a restart policy,
// one machine-down and one instance-lost mail to the admins per entry. The
// subject and body are written then, from the state at that index, so they
// are the same on every replica and in every resend; the recipients too
// (owner resolved to the job's owner, the admins as the database lists them
// at that index). A record's ID is made of the entry's index, the event,
// and the job and instance (812.fail.17, 815.machine-down), unique because
// one entry files one mail per event and job.
//
// Pending mail is part of the state (snapshot version 9) and bounded: past
// MaxPendingMail (1000) the oldest is dropped with a mail-dropped event, so
// a group with no relay, or a relay down for days, does not grow without
// bound.
//
// *Sending.* The leader runs one goroutine per term (mail.Sender, started by
// leaderLoop, not waited for by it: a relay that hangs cannot delay a new
// term) that sends the oldest pending mail that is due, through
// server/mailer (go-mail: SMTP with a STARTTLS policy and SASL auth, or a
// sendmail program), and commits MailSent with the outcome. The Message-ID
// is <netmgr.ID@DOMAIN>. A failure is committed too (the record keeps
// Attempts, LastError, and the leader's LastTry), so a new leader continues
// the backoff: due again `LastTry + 5 s * 2^(n-1)`, at most 10 min; the
// 12th failure commits GaveUp and the mail is removed. Every outcome is an
// event (mail-sent, mail-failed, mail-dropped) and the leader counts them
// in /metrics.
//
// *Exactly once, almost.* The relay taking a message and MailSent
// committing cannot be one atomic step. A leader that dies between them
// leaves the mail pending; the next leader sends it again under the same
// Message-ID. So a message is sent at least once while some leader has a
// relay, and at most twice per leader death in that window, both copies
// identical, which mail clients deduplicate by Message-ID
// (server.TestMailLeaderKilledBetweenSendAndRecord holds the relay's answer
// while the leader is stopped in process;
// cmd/netmgr.TestE2EMailLeaderKilled SIGKILLs a server process). A MailSent
// for an ID no longer pending changes nothing.
//
// *Mixed versions.* A replica older than level 31 files no mail; the leader
// sends nothing until every server applies 31, and jobs asking for mail are
// refused until then, so the pending mail can only differ between replicas
// while an older one is still in the group, and it influences nothing else
// in the state.
package mailer
