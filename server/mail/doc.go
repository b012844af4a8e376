// Package mail is the leader's mail duty. The state machine files pending
// mail as it applies the events a job or the admins are mailed about
// (fsm/mail.go); the Sender sends it, one message at a time in index
// order, in a goroutine of its own, so that a slow or dead relay never
// holds up scheduling, and commits a MailSent for each outcome. A new
// leader finds what is still pending and sends it under the same
// Message-ID: a leader that dies after the relay took a message but
// before its MailSent committed causes one duplicate at most, which mail
// clients recognise by that ID.
//
// It owns when a mail is due (the retry backoff and when to give up) and
// the commit of each outcome. It does not decide what is mailed or to
// whom (the fsm does) and it does not speak SMTP or run sendmail (package
// server/mailer does, knowing nothing of the database). It reaches the
// server only through a duty.Handle.
package mail
