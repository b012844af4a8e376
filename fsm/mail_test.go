package fsm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/fsm"
)

// pending returns copies of the pending mail, oldest first.
func (a *applier) pending() []fsm.Mail {
	var out []fsm.Mail
	a.f.Read(func(v fsm.View) {
		for _, m := range v.PendingMail() {
			out = append(out, fsm.CopyMail(m))
		}
	})
	return out
}

// events returns the kinds of the events applied after index.
func (a *applier) eventKinds(after uint64) []string {
	var out []string
	a.f.Read(func(v fsm.View) {
		for _, e := range v.EventsSince(after) {
			out = append(out, e.Kind)
		}
	})
	return out
}

// submitMail creates a one-instance job of owner that mails to, for the
// mail types given, and returns its id.
func (a *applier) submitMail(owner, to string, types []string, restart string) uint64 {
	a.tb.Helper()
	s := withMail(spec("mailer", 1), to, types...)
	s.Restart = restart
	return a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: owner, Spec: s}).JobID
}

// mustContain fails unless s holds every one of wants.
func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s %q lacks %q", what, s, w)
		}
	}
}

func TestMailEveryTypeOfAJob(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	id := a.submitMail("alice", fsm.MailOwner, []string{fsm.MailAll}, "")
	a.place(asg(id, 0, "m1"))
	reg := a.next
	a.register(id, 0, "m1", 42)
	got := a.pending()
	if len(got) != 1 || got[0].Event != fsm.MailBegin || got[0].ID != fmt.Sprintf("%d.begin.%d.0", reg, id) {
		t.Fatalf("after the start got %+v, want one begin mail with ID %d.begin.%d.0", got, reg, id)
	}
	if !slices.Equal(got[0].To, []string{"alice"}) {
		t.Errorf("got recipients %v, want the owner alice", got[0].To)
	}
	mustContain(t, "subject", got[0].Subject, "job 1 (mailer) began on m1")
	end := a.next
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(64), JobID: id, Instance: 0, Attempt: 1, Machine: "m1", ExitCode: 3, UserMS: 1500, SysMS: 20, MaxRSSKB: 2048})
	got = a.pending()
	if len(got) != 2 || got[1].Event != fsm.MailFail || got[1].ID != fmt.Sprintf("%d.fail.%d", end, id) {
		t.Fatalf("after the end got %+v, want the begin mail and a fail mail", got)
	}
	fail := got[1]
	mustContain(t, "subject", fail.Subject, "job 1 (mailer) ended: failed, exit 3")
	mustContain(t, "body", fail.Body, "Job:        1 (mailer)", "Instance 0, attempt 1", "Machine:    m1",
		"Ended:      exit status 3", "Run time:   1m1s", "user 1.5s, system 20ms, max RSS 2048 KB")

	// Recorded sent: gone; failed: kept, counted; an unknown ID: nothing.
	ix := a.next - 1
	a.mustOK(fsm.MailSentType, fsm.MailSent{At: at(70), ID: got[0].ID})
	a.mustOK(fsm.MailSentType, fsm.MailSent{At: at(71), ID: fail.ID, Error: "550 no such user"})
	a.mustOK(fsm.MailSentType, fsm.MailSent{At: at(72), ID: got[0].ID}) // a second leader's record
	got = a.pending()
	if len(got) != 1 || got[0].ID != fail.ID || got[0].Attempts != 1 || got[0].LastError != "550 no such user" || !got[0].LastTry.Equal(at(71)) {
		t.Fatalf("got %+v, want the fail mail left, one failed attempt at at(71)", got)
	}
	a.mustOK(fsm.MailSentType, fsm.MailSent{At: at(73), ID: fail.ID, Error: "550 no such user", GaveUp: true})
	if got := a.pending(); len(got) != 0 {
		t.Errorf("got %+v pending after giving up, want none", got)
	}
	if kinds := a.eventKinds(ix); !slices.Equal(kinds, []string{fsm.EventMailSent, fsm.EventMailFailed, fsm.EventMailDropped}) {
		t.Errorf("got events %v, want mail-sent, mail-failed, mail-dropped", kinds)
	}
}

func TestMailDefaultTypesAreEndAndFail(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	id := a.submitMail("alice", "ops@example.org", nil, "")
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 42)
	if got := a.pending(); len(got) != 0 {
		t.Fatalf("got %+v after the start, want no begin mail by default", got)
	}
	a.term(id, 0, "m1", 0)
	got := a.pending()
	if len(got) != 1 || got[0].Event != fsm.MailEnd || !slices.Equal(got[0].To, []string{"ops@example.org"}) {
		t.Fatalf("got %+v, want one end mail to ops@example.org", got)
	}
	mustContain(t, "subject", got[0].Subject, "ended: done, exit 0")
}

func TestMailNotAskedForFilesNothing(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	id := a.submit("plain", 1)
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 42)
	a.term(id, 0, "m1", 1)
	if got := a.pending(); len(got) != 0 {
		t.Errorf("got %+v, want no mail for a job without mail and no admins", got)
	}
}

// A restarted instance is requeued, not ended: the fail mail comes after
// the last restart, with the admins' mail.
func TestMailRequeueThenFailAfterLastRestart(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.load(fsm.Database{Admins: []string{"tclark"}})
	s := withMail(spec("flaky", 1), fsm.MailOwner, fsm.MailRequeue, fsm.MailFail)
	s.Restart, s.MaxRestarts = fsm.RestartOnFailure, 1
	id := a.mustOK(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "bob", Spec: s}).JobID
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 42)
	a.term(id, 0, "m1", 2)
	got := a.pending()
	if len(got) != 1 || got[0].Event != fsm.MailRequeue {
		t.Fatalf("after the first failure got %+v, want one requeue mail", got)
	}
	mustContain(t, "requeue subject", got[0].Subject, "instance 0 requeued: attempt 1 on m1 failed")
	a.mustOK(fsm.PlaceType, fsm.Place{At: at(10), PlannedAtIndex: a.next - 1, Assignments: []fsm.Assignment{{JobID: id, Instance: 0, Attempt: 2, Machine: "m1", Key: fsm.AnyKey}}})
	a.mustOK(fsm.ChildRegisterType, fsm.ChildRegister{At: at(11), JobID: id, Instance: 0, Attempt: 2, Machine: "m1", PID: 43})
	a.mustOK(fsm.ChildTermType, fsm.ChildTerm{At: at(12), JobID: id, Instance: 0, Attempt: 2, Machine: "m1", ExitCode: 2})
	got = a.pending()
	if len(got) != 3 || got[1].Event != fsm.MailFail || got[2].Event != fsm.MailJobFailed {
		t.Fatalf("after the last failure got %+v, want the requeue, a fail and an admin job-failed mail", got)
	}
	if !slices.Equal(got[1].To, []string{"bob"}) || !slices.Equal(got[2].To, []string{"tclark"}) {
		t.Errorf("got recipients %v and %v, want bob and the admin tclark", got[1].To, got[2].To)
	}
	mustContain(t, "admin subject", got[2].Subject, "job 1 (flaky) of bob failed after its last restart")
	mustContain(t, "admin body", got[2].Body, "Instance 0, attempt 2", "exit status 2")
}

func TestMailCancelledDependencyNamesTheReason(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	dep := a.submit("build", 1)
	s := withMail(spec("deploy", 1), "ops@example.org")
	s.AfterOK = []uint64{dep}
	id := a.mustOK(fsm.SubmitAfterType, fsm.Submit{At: at(1), Owner: "alice", Spec: s}).JobID
	a.place(asg(dep, 0, "m1"))
	a.register(dep, 0, "m1", 42)
	a.term(dep, 0, "m1", 1)
	got := a.pending()
	if len(got) != 1 || got[0].Event != fsm.MailFail || got[0].Job != id {
		t.Fatalf("got %+v, want one fail mail for the cancelled job %d", got, id)
	}
	mustContain(t, "subject", got[0].Subject, "ended: cancelled(afterok job 1 (build) failed)")
	mustContain(t, "body", got[0].Body, "cancelled(dependency)", "Reason:     dependency: afterok job 1 (build) failed")
}

func TestMailAdminsOnMachineDownAndLostInstances(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	a.load(fsm.Database{Admins: []string{"tclark", "root"}})
	id := a.submit("victim", 2)
	a.place(asg(id, 0, "m1"), asg(id, 1, "m1"))
	a.register(id, 0, "m1", 42)
	idx := a.next
	a.leave("m1", "missed contact")
	got := a.pending()
	if len(got) != 2 || got[0].ID != fmt.Sprintf("%d.instance-lost", idx) || got[1].ID != fmt.Sprintf("%d.machine-down", idx) {
		t.Fatalf("got %+v, want an instance-lost and a machine-down mail", got)
	}
	if !slices.Equal(got[1].To, []string{"tclark", "root"}) {
		t.Errorf("got recipients %v, want the admins", got[1].To)
	}
	if got[1].Subject != "netmgr: machine m1 down" {
		t.Errorf("got subject %q, want %q", got[1].Subject, "netmgr: machine m1 down")
	}
	mustContain(t, "machine-down body", got[1].Body, "m1: missed contact")
	mustContain(t, "instance-lost body", got[0].Body, "job 1 (victim) of alice, instance 0, attempt 1 on m1", "instance 1, attempt 1 on m1")
	// The job ended (both instances lost): the admins are not mailed
	// again for it, since it had no restart policy.
	a.apply(fsm.ServerRemovedType|fsm.IgnoreUnknownFlag, fsm.ServerRemoved{At: at(60), Name: "s3", By: "root"})
	got = a.pending()
	if len(got) != 3 || got[2].Event != fsm.MailServerRemoved {
		t.Fatalf("got %+v, want a server-removed mail too", got)
	}
	mustContain(t, "server-removed subject", got[2].Subject, "server s3 removed from the group")
}

func TestMailPendingIsBounded(t *testing.T) {
	a := newApplier(t)
	a.load(fsm.Database{Admins: []string{"tclark"}})
	first := a.next
	for i := range fsm.MaxPendingMail + 2 {
		a.apply(fsm.ServerRemovedType|fsm.IgnoreUnknownFlag, fsm.ServerRemoved{At: at(i), Name: "s", By: "root"})
	}
	got := a.pending()
	if len(got) != fsm.MaxPendingMail || got[0].Index != first+2 {
		t.Fatalf("got %d pending, the oldest at index %d, want %d, the oldest at %d", len(got), got[0].Index, fsm.MaxPendingMail, first+2)
	}
	if kinds := a.eventKinds(a.next - 2); !slices.Contains(kinds, fsm.EventMailDropped) {
		t.Errorf("got events %v, want a mail-dropped", kinds)
	}
}

func TestMailSpecRefusals(t *testing.T) {
	a := newApplier(t)
	for _, s := range []fsm.JobSpec{
		withMail(spec("x", 1), "alice", "sometimes"),
		withMail(spec("x", 1), "", fsm.MailEnd),
	} {
		wantErr(t, a.apply(fsm.SubmitType, fsm.Submit{At: at(1), Owner: "a", Spec: s}).Err, fsm.ErrInvalidSpec)
	}
}

// Pending mail survives a snapshot with its attempts, and a restored
// replica files the same mail for the same entries.
func TestMailSnapshotRoundTrip(t *testing.T) {
	a := newApplier(t)
	a.join("m1", "x86_64", 2)
	id := a.submitMail("alice", fsm.MailOwner, []string{fsm.MailAll}, "")
	a.place(asg(id, 0, "m1"))
	a.register(id, 0, "m1", 42)
	a.mustOK(fsm.MailSentType, fsm.MailSent{At: at(5), ID: a.pending()[0].ID, Error: "421 try later"})
	b := &applier{tb: t, f: restored(t, snapshotBytes(t, a.f)), next: a.next}
	if got, want := b.pending(), a.pending(); !slices.EqualFunc(got, want, mailEqual) {
		t.Fatalf("restored pending mail %+v, want %+v", got, want)
	}
	a.term(id, 0, "m1", 0)
	b.term(id, 0, "m1", 0)
	if got, want := b.pending(), a.pending(); len(got) != 2 || !slices.EqualFunc(got, want, mailEqual) {
		t.Errorf("after the end the restored replica holds %+v, want %+v", got, want)
	}
}

func mailEqual(x, y fsm.Mail) bool {
	return x.ID == y.ID && x.Index == y.Index && x.At.Equal(y.At) && x.Event == y.Event && slices.Equal(x.To, y.To) &&
		x.Job == y.Job && x.Subject == y.Subject && x.Body == y.Body && x.Attempts == y.Attempts &&
		x.LastError == y.LastError && x.LastTry.Equal(y.LastTry)
}
