package server_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server"
	"github.com/netmgr/netmgr/server/mailer"
	"github.com/netmgr/netmgr/server/mailer/smtptest"
	"github.com/netmgr/netmgr/server/servertest"
)

// mailPool starts n servers that send mail through relay, with a short
// retry, and the named stubs, and waits until every stub is up.
func mailPool(t *testing.T, n int, relay *smtptest.Server, stubs ...string) (*servertest.Cluster, *client.Client) {
	t.Helper()
	c := servertest.NewClusterConfig(t, n, func(_ int, cfg *server.Config) {
		cfg.Mail = &mailer.Config{SMTP: relay.Addr(), StartTLS: mailer.StartTLSNone, From: "netmgr@cluster.test", Timeout: 10 * time.Second}
		cfg.MailRetry = 50 * time.Millisecond
	})
	c.WaitLeader()
	for _, name := range stubs {
		c.AddStub(name)
	}
	cl := c.Client()
	testwait.For(t, 15*time.Second, "stubs up", func() bool {
		ms, err := cl.Machines(ctx(t))
		up := 0
		for _, m := range ms {
			if m.State == client.MachineUp {
				up++
			}
		}
		return err == nil && up == len(stubs)
	})
	return c, cl
}

// waitNoPendingMail waits until every running server's state holds no
// pending mail: each mail's MailSent committed and applied.
func waitNoPendingMail(t *testing.T, c *servertest.Cluster, skip ...int) {
	t.Helper()
	testwait.For(t, 15*time.Second, "no pending mail", func() bool {
		for i, s := range c.Servers {
			if !contains(skip, i) && s.PendingMail() != 0 {
				return false
			}
		}
		return true
	})
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// eventsOf returns the events of the given kind.
func eventsOf(t *testing.T, cl *client.Client, kind string) []client.Event {
	t.Helper()
	evs, err := cl.Events(ctx(t), 0)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	var out []client.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestMailToARealRelay runs a job asking for every mail type, which
// exits 3: the relay gets its begin and fail messages, to the address
// given, saying where it ran, how it ended, its run time and resource
// use; each is recorded sent.
func TestMailToARealRelay(t *testing.T) {
	t.Parallel()
	relay := smtptest.Start(t, smtptest.Options{})
	c, cl := mailPool(t, 1, relay, "alpha")
	spec := shSpec(`sleep 0.1; exit 3`, 1)
	spec.Mail, spec.MailType = "ops@example.org", []string{"all"}
	id := submitNamed(t, cl, "mailed", spec)
	if _, err := cl.WaitJob(ctx(t), "mailed", client.WaitDone); err != nil {
		t.Fatalf("wait: %v", err)
	}
	msgs := relay.WaitMessages(t, 2, 15*time.Second)
	waitNoPendingMail(t, c)
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2: %+v", len(msgs), msgs)
	}
	jid := strconv.FormatUint(id, 10)
	begin, fail := msgs[0], msgs[1]
	for _, m := range msgs {
		if len(m.To) != 1 || m.To[0] != "ops@example.org" || m.From != "netmgr@cluster.test" {
			t.Errorf("got a message from %q to %v, want from netmgr@cluster.test to ops@example.org", m.From, m.To)
		}
		if !strings.HasPrefix(m.MessageID, "<netmgr.") || !strings.HasSuffix(m.MessageID, "@cluster.test>") {
			t.Errorf("got Message-ID %q, want <netmgr.…@cluster.test>", m.MessageID)
		}
	}
	if want := "netmgr job " + jid + " (mailed) began on alpha"; begin.Subject != want {
		t.Errorf("got first subject %q, want %q", begin.Subject, want)
	}
	if want := "netmgr job " + jid + " (mailed) ended: failed, exit 3"; fail.Subject != want {
		t.Errorf("got second subject %q, want %q", fail.Subject, want)
	}
	for _, want := range []string{"Job:        " + jid + " (mailed)", "Owner:      " + servertest.CurrentUser(t),
		"Instance 0, attempt 1", "Machine:    alpha", "Ended:      exit status 3", "Run time:   ", "Resources:  user "} {
		if !strings.Contains(fail.Body, want) {
			t.Errorf("fail body lacks %q:\n%s", want, fail.Body)
		}
	}
	if sent := eventsOf(t, cl, "mail-sent"); len(sent) != 2 {
		t.Errorf("got %d mail-sent events, want 2: %+v", len(sent), sent)
	}
	if m := scrape(t, c, c.Servers[0].HTTPAddr()); m["netmgr_server_mail_sent_total"] != 2 || m["netmgr_server_mail_pending"] != 0 {
		t.Errorf("got mail_sent_total %v and mail_pending %v, want 2 and 0", m["netmgr_server_mail_sent_total"], m["netmgr_server_mail_pending"])
	}
}

// TestMailRetriedAfterARefusal has the relay refuse the first two
// attempts: each failure is an event and a metric, and the third attempt
// delivers it.
func TestMailRetriedAfterARefusal(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	relay := smtptest.Start(t, smtptest.Options{OnData: func(smtptest.Message) error {
		if calls.Add(1) <= 2 {
			return errors.New("try again later")
		}
		return nil
	}})
	c, cl := mailPool(t, 1, relay, "alpha")
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, Mail: "owner"}
	submitNamed(t, cl, "retried", spec)
	msgs := relay.WaitMessages(t, 1, 15*time.Second)
	waitNoPendingMail(t, c)
	if want := servertest.CurrentUser(t) + "@cluster.test"; len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != want {
		t.Fatalf("got %+v, want one message to the owner %s", msgs, want)
	}
	failed := eventsOf(t, cl, "mail-failed")
	if len(failed) != 2 || !strings.Contains(failed[0].Detail, "try again later") || !strings.Contains(failed[1].Detail, "attempt 2") {
		t.Errorf("got mail-failed events %+v, want two naming the relay's answer", failed)
	}
	if m := scrape(t, c, c.Servers[0].HTTPAddr()); m["netmgr_server_mail_send_failures_total"] != 2 {
		t.Errorf("got mail_send_failures_total %v, want 2", m["netmgr_server_mail_send_failures_total"])
	}
}

// TestMailLeaderKilledBetweenSendAndRecord holds the relay's answer to
// the first delivery while the leader that sent it is stopped: the new
// leader sends the mail again with the same Message-ID and records it, so
// the relay holds at most one extra copy, never a different message.
func TestMailLeaderKilledBetweenSendAndRecord(t *testing.T) {
	t.Parallel()
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	relay := smtptest.Start(t, smtptest.Options{OnData: func(smtptest.Message) error {
		first := false
		once.Do(func() { first = true })
		if first {
			close(held)
			<-release
		}
		return nil
	}})
	c, cl := mailPool(t, 3, relay, "alpha")
	spec := client.JobSpec{Binaries: map[string]string{client.AnyKey: "/bin/true"}, Mail: "ops@example.org"}
	submitNamed(t, cl, "once", spec)
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the relay got no delivery in 20s")
	}
	old := c.WaitLeader()
	stopped := make(chan error, 1)
	go func() { stopped <- c.Servers[old].Shutdown() }()
	c.WaitLeader(old)
	waitNoPendingMail(t, c, old)
	close(release)
	if err := <-stopped; err != nil {
		t.Logf("stopping the old leader: %v", err)
	}
	msgs := relay.WaitMessages(t, 1, 10*time.Second)
	if len(msgs) > 2 {
		t.Fatalf("the relay got %d messages, want at most 2 (one extra)", len(msgs))
	}
	for _, m := range msgs[1:] {
		if m.MessageID != msgs[0].MessageID || m.Subject != msgs[0].Subject || m.Body != msgs[0].Body {
			t.Errorf("got a second message %+v, want the first again with its Message-ID %s", m, msgs[0].MessageID)
		}
	}
	t.Logf("relay holds %d copies of %s", len(msgs), msgs[0].MessageID)
}

// TestAdminMailOnMachineDown mails the database's admin_id when a
// machine leaves the pool.
func TestAdminMailOnMachineDown(t *testing.T) {
	t.Parallel()
	relay := smtptest.Start(t, smtptest.Options{})
	c, cl := mailPool(t, 1, relay, "alpha", "beta")
	if _, err := cl.LoadDatabase(ctx(t), client.DatabaseText{Filename: "admins.db", Text: "admin_id tclark\nallow_root_jobs\n"}); err != nil {
		t.Fatalf("load: %v", err)
	}
	_ = c.Stubs[1].Shutdown()
	msgs := relay.WaitMessages(t, 1, 20*time.Second)
	m := msgs[0]
	if len(m.To) != 1 || m.To[0] != "tclark@cluster.test" || m.Subject != "netmgr: machine beta down" {
		t.Fatalf("got a message to %v with subject %q, want tclark@cluster.test and %q", m.To, m.Subject, "netmgr: machine beta down")
	}
	if !strings.Contains(m.Body, "Machines down:\n  beta: ") {
		t.Errorf("body lacks the machine and why:\n%s", m.Body)
	}
	waitNoPendingMail(t, c)
}
