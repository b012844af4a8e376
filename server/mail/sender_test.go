package mail

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/internal/promtext"
	"github.com/netmgr/netmgr/server/duty/dutytest"
	"github.com/netmgr/netmgr/server/mailer"
	"github.com/netmgr/netmgr/server/mailer/smtptest"
)

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{
		{0, 0}, {1, time.Second}, {2, 2 * time.Second}, {4, 8 * time.Second}, {12, maxRetry}, {100, maxRetry},
	} {
		if got := retryDelay(time.Second, tc.attempts); got != tc.want {
			t.Errorf("after %d attempts: %v, want %v", tc.attempts, got, tc.want)
		}
	}
}

// fileBeginMail has the database file one pending mail: the begin mail
// of a job that starts on m1.
func fileBeginMail(t *testing.T, h *dutytest.Handle) {
	t.Helper()
	at := time.Now().UTC()
	h.MustApply(t, fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "m1", Arch: "x86_64", CPUs: 2, MemoryMB: 1024, Addr: "127.0.0.1:1"}})
	spec := fsm.JobSpec{Name: "mailed", Binaries: map[string]string{fsm.AnyKey: "/bin/true"}, Min: 1,
		Mail: "ops@example.org", MailTypes: []string{fsm.MailBegin}}
	job := h.MustApply(t, fsm.SubmitType, fsm.Submit{At: at, Owner: "alice", Spec: spec}).JobID
	h.MustApply(t, fsm.PlaceType, fsm.Place{At: at, PlannedAtIndex: h.Index(), Assignments: []fsm.Assignment{
		{JobID: job, Instance: 0, Attempt: 1, Machine: "m1", Key: fsm.AnyKey}}})
	h.MustApply(t, fsm.ChildRegisterType, fsm.ChildRegister{At: at, JobID: job, Attempt: 1, Machine: "m1", PID: 100})
	pending := 0
	h.Read(func(v fsm.View) { pending = v.PendingMailCount() })
	if pending != 1 {
		t.Fatalf("the database holds %d pending mails, want the begin mail", pending)
	}
}

// The sender delivers the pending mail through a real relay, retries it
// after the relay refused it once, and commits each outcome: a failure,
// then the send, after which nothing is pending.
func TestSenderRetriesAndRecords(t *testing.T) {
	var calls atomic.Int32
	relay := smtptest.Start(t, smtptest.Options{OnData: func(smtptest.Message) error {
		if calls.Add(1) == 1 {
			return errors.New("try again later")
		}
		return nil
	}})
	m, err := mailer.New(mailer.Config{SMTP: relay.Addr(), StartTLS: mailer.StartTLSNone, From: "netmgr@cluster.test", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := dutytest.New()
	fileBeginMail(t, h)
	cfg := Config{Retry: 10 * time.Millisecond, Tick: 50 * time.Millisecond,
		Sent: promtext.NewCounter("sent", "sent"), Failed: promtext.NewCounter("failed", "failed")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(h, m, cfg).Run(ctx)
	}()
	defer func() { cancel(); <-done }()

	msgs := relay.WaitMessages(t, 1, 15*time.Second)
	if len(msgs) != 1 || msgs[0].To[0] != "ops@example.org" || !strings.HasPrefix(msgs[0].MessageID, "<netmgr.") {
		t.Errorf("relay holds %+v, want the begin mail", msgs)
	}
	deadline := time.After(15 * time.Second)
	for {
		_, changed := h.Watch()
		pending := -1
		h.Read(func(v fsm.View) { pending = v.PendingMailCount() })
		if pending == 0 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("mail still pending after 15 s")
		}
	}
	if cfg.Failed.Value() != 1 || cfg.Sent.Value() != 1 {
		t.Errorf("counted %v failed and %v sent, want 1 and 1", cfg.Failed.Value(), cfg.Sent.Value())
	}
}

// A group below the level of MailSent is sent nothing.
func TestSenderWaitsForTheGroup(t *testing.T) {
	relay := smtptest.Start(t, smtptest.Options{})
	m, err := mailer.New(mailer.Config{SMTP: relay.Addr(), StartTLS: mailer.StartTLSNone, From: "netmgr@cluster.test", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := dutytest.New()
	fileBeginMail(t, h)
	h.SetLevel(fsm.MailSentType - 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	New(h, m, Config{Tick: 10 * time.Millisecond, Sent: promtext.NewCounter("sent", "sent"), Failed: promtext.NewCounter("failed", "failed")}).Run(ctx)
	if got := relay.Messages(); len(got) != 0 {
		t.Errorf("relay got %d messages from a group that cannot record them", len(got))
	}
}
