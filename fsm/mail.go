package fsm

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Mail. A job that asks for mail (mail, mail=ADDRESS, mail_type=...) and
// the database's admin_ids get a message when certain events are applied.
// Apply never sends: it files a pending Mail, with its subject and body
// already written from the state at that index, under an ID made of the
// index and the event, so every replica holds the same pending mail. The
// leader sends what is pending and commits MailSent; a new leader sends
// what is still pending again, under the same ID (the message's
// Message-ID), so a leader that died between sending and recording makes
// at most one duplicate that a reader's mail client can tell apart.

// Mail types a job may ask for (mail_type, Slurm's --mail-type names).
const (
	MailBegin   = "begin"
	MailEnd     = "end"
	MailFail    = "fail"
	MailRequeue = "requeue"
	MailAll     = "all"
)

// Admin mail events: the failure events admin_ids are mailed about.
const (
	MailMachineDown   = "machine-down"
	MailServerRemoved = "server-removed"
	MailInstanceLost  = "instance-lost"
	MailJobFailed     = "job-failed"
)

// MailOwner is the JobSpec.Mail value that mails the job's owner.
const MailOwner = "owner"

// MaxPendingMail bounds the pending mail: when a new mail would pass it,
// the oldest is dropped (an event says so). It keeps a group whose mail
// cannot go out (no relay configured, a relay down for days) from growing
// its state without bound.
const MaxPendingMail = 1000

// maxMailInstances bounds the instances one message lists.
const maxMailInstances = 20

// Mail event kinds of the event ring.
const (
	EventMailSent    = "mail-sent"
	EventMailFailed  = "mail-failed"
	EventMailDropped = "mail-dropped"
)

// Mail is one message pending: filed when its event was applied, removed
// when a MailSent records it sent or given up.
type Mail struct {
	// ID names the message: the index of its event's entry, the event,
	// and the job and instance or machine it is about. Message-IDs are
	// made from it.
	ID    string    `json:"id"`
	Index uint64    `json:"index"`
	At    time.Time `json:"at"`
	Event string    `json:"event"`
	// To are the recipients: addresses, or logins the sending server
	// completes with its mail domain.
	To      []string `json:"to"`
	Job     uint64   `json:"job,omitempty"`
	Subject string   `json:"subject"`
	Body    string   `json:"body"`
	// Attempts counts failed sends; LastError and LastTry say how and
	// when the last one failed (the leader's time, from MailSent).
	Attempts  int       `json:"attempts,omitempty"`
	LastError string    `json:"last_error,omitempty"`
	LastTry   time.Time `json:"last_try,omitzero"`
}

// MailSent records the outcome of sending a pending mail: sent when Error
// is empty, else a failure the leader retries, or gives up on when GaveUp.
// An ID no longer pending (a new leader sent it again and a record came
// first) changes nothing. Since command level 31.
type MailSent struct {
	At     time.Time `json:"at"`
	ID     string    `json:"id"`
	Error  string    `json:"error,omitempty"`
	GaveUp bool      `json:"gave_up,omitempty"`
}

// ValidMailType reports whether t is a mail type a job may name.
func ValidMailType(t string) bool {
	switch t {
	case MailBegin, MailEnd, MailFail, MailRequeue, MailAll:
		return true
	}
	return false
}

// WantsMail reports whether the job's spec asks for mail of type t
// (begin, end, fail, requeue). With no mail_type it gets end and fail.
func (s *JobSpec) WantsMail(t string) bool {
	if s.Mail == "" {
		return false
	}
	if len(s.MailTypes) == 0 {
		return t == MailEnd || t == MailFail
	}
	return slices.Contains(s.MailTypes, t) || slices.Contains(s.MailTypes, MailAll)
}

// mailNotes is what one entry's apply noted for mail; flushMail turns it
// into pending mail once the entry is applied.
type mailNotes struct {
	ended    []uint64 // jobs whose last instance finished, in order
	lost     []string // "job 3 (name) instance 0 on m1: why" lines
	lostAt   time.Time
	machines []string // machines down
	down     []string // machine-down lines: the machine and why
	downAt   time.Time
}

// applyMailSent records a pending mail sent, failed or given up.
func (d *db) applyMailSent(index uint64, c *MailSent) *Result {
	m, ok := d.mails[c.ID]
	if !ok {
		return &Result{Index: index}
	}
	switch {
	case c.Error == "":
		delete(d.mails, c.ID)
		d.event(index, c.At, EventMailSent, m.Job, -1, 0, "", fmt.Sprintf("mail %s to %s sent", m.ID, strings.Join(m.To, ", ")))
	case c.GaveUp:
		delete(d.mails, c.ID)
		d.event(index, c.At, EventMailDropped, m.Job, -1, 0, "", fmt.Sprintf("mail %s to %s given up after %d attempts: %s", m.ID, strings.Join(m.To, ", "), m.Attempts+1, c.Error))
	default:
		m.Attempts++
		m.LastError = c.Error
		m.LastTry = c.At
		d.event(index, c.At, EventMailFailed, m.Job, -1, 0, "", fmt.Sprintf("mail %s to %s failed (attempt %d): %s", m.ID, strings.Join(m.To, ", "), m.Attempts, c.Error))
	}
	return &Result{Index: index}
}

// fileMail adds a pending mail, dropping the oldest when there are
// MaxPendingMail already.
func (d *db) fileMail(m *Mail) {
	if len(m.To) == 0 {
		return
	}
	if _, dup := d.mails[m.ID]; dup {
		return
	}
	if len(d.mails) >= MaxPendingMail {
		old := d.sortedMails()[0]
		delete(d.mails, old.ID)
		d.event(m.Index, m.At, EventMailDropped, old.Job, -1, 0, "", fmt.Sprintf("mail %s dropped: more than %d pending", old.ID, MaxPendingMail))
	}
	d.mails[m.ID] = m
}

// sortedMails is the pending mail oldest first (by index, then ID).
func (d *db) sortedMails() []*Mail {
	out := make([]*Mail, 0, len(d.mails))
	for _, m := range d.mails {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *Mail) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// PendingMail returns the mail not yet recorded sent, oldest first.
func (v View) PendingMail() []*Mail { return v.d.sortedMails() }

// PendingMailCount is how many mails are pending.
func (v View) PendingMailCount() int { return len(v.d.mails) }

// jobRecipient is who a job's mail goes to.
func jobRecipient(j *Job) string {
	if j.Spec.Mail == MailOwner {
		return j.Owner
	}
	return j.Spec.Mail
}

// noteBegin files the begin mail of a job whose first instance started.
func (d *db) noteBegin(j *Job, in *Instance, index uint64, at time.Time) {
	if !j.Spec.WantsMail(MailBegin) {
		return
	}
	subject := fmt.Sprintf("netmgr job %d (%s) began on %s", j.ID, j.Name, in.Machine)
	d.fileMail(&Mail{
		ID: fmt.Sprintf("%d.%s.%d.%d", index, MailBegin, j.ID, in.Index), Index: index, At: at, Event: MailBegin,
		To: []string{jobRecipient(j)}, Job: j.ID, Subject: subject, Body: jobMailBody(j, MailBegin, subject, in.Index),
	})
}

// noteRequeue files the requeue mail of an instance whose attempt ended
// and that waits for its next one.
func (d *db) noteRequeue(j *Job, in *Instance, index uint64, at time.Time) {
	if !j.Spec.WantsMail(MailRequeue) || len(in.History) == 0 {
		return
	}
	last := in.History[len(in.History)-1]
	subject := fmt.Sprintf("netmgr job %d (%s) instance %d requeued: attempt %d on %s %s", j.ID, j.Name, in.Index, last.Attempt, last.Machine, last.State)
	d.fileMail(&Mail{
		ID: fmt.Sprintf("%d.%s.%d.%d.%d", index, MailRequeue, j.ID, in.Index, last.Attempt), Index: index, At: at, Event: MailRequeue,
		To: []string{jobRecipient(j)}, Job: j.ID, Subject: subject, Body: jobMailBody(j, MailRequeue, subject, in.Index),
	})
}

// flushMail files the mail the entry at index noted: the end or fail mail
// of each job that ended (and is still ended: an instance restarted in the
// same entry makes it run again), and the admins' mail.
func (d *db) flushMail(index uint64) {
	if len(d.notes.ended)+len(d.notes.lost)+len(d.notes.machines) == 0 {
		return // the common entry: nothing noted, nothing to allocate
	}
	n := d.notes
	d.notes = mailNotes{}
	admins := slices.Clone(d.database.Admins)
	for _, id := range n.ended {
		j := d.jobs[id]
		if j == nil || !j.allFinished() {
			continue
		}
		state := j.State()
		at := endedAt(j)
		failed := state == JobFailed || state == JobCancelled
		kind := MailEnd
		if failed && j.Spec.WantsMail(MailFail) {
			kind = MailFail
		}
		if j.Spec.WantsMail(kind) {
			subject := fmt.Sprintf("netmgr job %d (%s) ended: %s", j.ID, j.Name, jobOutcome(j))
			d.fileMail(&Mail{
				ID: fmt.Sprintf("%d.%s.%d", index, kind, j.ID), Index: index, At: at, Event: kind,
				To: []string{jobRecipient(j)}, Job: j.ID, Subject: subject, Body: jobMailBody(j, kind, subject, -1),
			})
		}
		if state == JobFailed && j.Spec.Restartable() {
			subject := fmt.Sprintf("netmgr: job %d (%s) of %s failed after its last restart", j.ID, j.Name, j.Owner)
			d.fileMail(&Mail{
				ID: fmt.Sprintf("%d.%s.%d", index, MailJobFailed, j.ID), Index: index, At: at, Event: MailJobFailed,
				To: admins, Job: j.ID, Subject: subject, Body: jobMailBody(j, MailJobFailed, subject, -1),
			})
		}
	}
	if len(n.machines) > 0 {
		subject := fmt.Sprintf("netmgr: machine %s down", strings.Join(n.machines, ", "))
		if len(n.machines) > 1 {
			subject = fmt.Sprintf("netmgr: %d machines down", len(n.machines))
		}
		d.fileMail(&Mail{
			ID: fmt.Sprintf("%d.%s", index, MailMachineDown), Index: index, At: n.downAt, Event: MailMachineDown,
			To: admins, Subject: subject, Body: adminBody(subject, n.downAt, "Machines down:", n.down),
		})
	}
	if len(n.lost) > 0 {
		subject := fmt.Sprintf("netmgr: %d instance(s) lost", len(n.lost))
		d.fileMail(&Mail{
			ID: fmt.Sprintf("%d.%s", index, MailInstanceLost), Index: index, At: n.lostAt, Event: MailInstanceLost,
			To: admins, Subject: subject, Body: adminBody(subject, n.lostAt, "Instances lost:", n.lost),
		})
	}
}

// noteServerRemoved files the admins' mail about a server removed from
// the group.
func (d *db) noteServerRemoved(index uint64, c *ServerRemoved) {
	subject := fmt.Sprintf("netmgr: server %s removed from the group", c.Name)
	d.fileMail(&Mail{
		ID: fmt.Sprintf("%d.%s", index, MailServerRemoved), Index: index, At: c.At, Event: MailServerRemoved,
		To: slices.Clone(d.database.Admins), Subject: subject,
		Body: adminBody(subject, c.At, "Removed:", []string{fmt.Sprintf("%s, by %s", c.Name, actor(c.By))}),
	})
}

// jobOutcome says in a few words how an ended job ended.
func jobOutcome(j *Job) string {
	state := j.State()
	if len(j.Instances) == 1 {
		in := &j.Instances[0]
		switch {
		case in.State == InstanceCancelled:
			return "cancelled(" + strings.TrimPrefix(in.Reason, "dependency: ") + ")"
		case in.State == InstanceKilled && j.KilledBy != "":
			return "killed by " + j.KilledBy
		}
		return state + ", " + endDetail(in)
	}
	return state
}

// mailTime is how mail prints times: UTC, to the second.
func mailTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 MST")
}

// jobMailBody writes a job's message: the job, then each instance (just
// instance only when only >= 0): where it ran, how it ended, its run time
// and resource use, and why it ended.
func jobMailBody(j *Job, event, subject string, only int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", subject)
	fmt.Fprintf(&b, "Job:        %d (%s)\n", j.ID, j.Name)
	fmt.Fprintf(&b, "Owner:      %s\n", j.Owner)
	fmt.Fprintf(&b, "Queue:      %s\n", j.Spec.QueueName())
	fmt.Fprintf(&b, "Event:      %s\n", event)
	fmt.Fprintf(&b, "State:      %s\n", j.State())
	fmt.Fprintf(&b, "Submitted:  %s\n", mailTime(j.SubmittedAt))
	listed := 0
	for i := range j.Instances {
		in := &j.Instances[i]
		if only >= 0 && in.Index != only {
			continue
		}
		if listed == maxMailInstances {
			fmt.Fprintf(&b, "\n... and %d more instances (netstatus -j %d shows them all)\n", len(j.Instances)-listed, j.ID)
			break
		}
		listed++
		instanceLines(&b, in, event)
	}
	return b.String()
}

// instanceLines writes one instance's part of a job's message. For a
// requeue it describes the attempt that ended (the last of its history).
func instanceLines(b *strings.Builder, in *Instance, event string) {
	a := AttemptEnd{
		Attempt: in.Attempt, Machine: in.Machine, State: in.State, ExitCode: in.ExitCode, Signal: in.Signal,
		Error: in.Error, Reason: in.Reason, UserMS: in.UserMS, SysMS: in.SysMS, MaxRSSKB: in.MaxRSSKB,
		StartedAt: in.StartedAt, EndedAt: in.EndedAt,
	}
	if event == MailRequeue && len(in.History) > 0 {
		a = in.History[len(in.History)-1]
	}
	fmt.Fprintf(b, "\nInstance %d, attempt %d\n", in.Index, a.Attempt)
	machine := a.Machine
	if machine == "" {
		machine = "(never placed)"
	}
	fmt.Fprintf(b, "  Machine:    %s\n", machine)
	fmt.Fprintf(b, "  State:      %s\n", a.State)
	switch {
	case a.State == InstanceCancelled:
		fmt.Fprintf(b, "  Ended:      cancelled(dependency)\n")
	case a.State == InstanceLost:
		fmt.Fprintf(b, "  Ended:      lost with its machine\n")
	case a.Signal != "":
		fmt.Fprintf(b, "  Ended:      signal %s\n", a.Signal)
	case a.Finished():
		fmt.Fprintf(b, "  Ended:      exit status %d\n", a.ExitCode)
	}
	if a.Error != "" || a.Reason != "" {
		fmt.Fprintf(b, "  Reason:     %s\n", strings.TrimSpace(a.Error+" "+a.Reason))
	}
	fmt.Fprintf(b, "  Started:    %s\n", mailTime(a.StartedAt))
	if !a.EndedAt.IsZero() {
		fmt.Fprintf(b, "  Ended at:   %s\n", mailTime(a.EndedAt))
		if !a.StartedAt.IsZero() {
			fmt.Fprintf(b, "  Run time:   %s\n", a.EndedAt.Sub(a.StartedAt).Round(time.Millisecond))
		}
	}
	if a.UserMS > 0 || a.SysMS > 0 || a.MaxRSSKB > 0 {
		fmt.Fprintf(b, "  Resources:  user %s, system %s, max RSS %d KB\n",
			time.Duration(a.UserMS)*time.Millisecond, time.Duration(a.SysMS)*time.Millisecond, a.MaxRSSKB)
	}
}

// Finished reports whether the attempt's state is an end state.
func (a *AttemptEnd) Finished() bool {
	in := Instance{State: a.State}
	return in.Finished()
}

// adminBody writes an admin's message: the subject, when, and the lines.
func adminBody(subject string, at time.Time, heading string, lines []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nAt: %s\n\n%s\n", subject, mailTime(at), heading)
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// copyMail returns a copy of m that shares nothing with the state.
func copyMail(m *Mail) Mail {
	c := *m
	c.To = slices.Clone(m.To)
	return c
}

// CopyMail returns a copy of a pending mail a View returned, safe to keep
// after Read returns.
func CopyMail(m *Mail) Mail { return copyMail(m) }
