package main

import (
	"context"
	"os/user"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/testwait"
	"github.com/netmgr/netmgr/server/mailer/smtptest"
	"github.com/netmgr/netmgr/server/servertest"
)

// TestE2EMailLeaderKilled runs 3 server processes that mail through a
// real SMTP server in this test. The relay holds its answer to the first
// delivery of a job's end mail while the leader that sent it is
// SIGKILLed, before it could commit that it sent it: the new leader sends
// the mail again, and the relay ends with at most one extra copy, with the
// same Message-ID, subject and body.
func TestE2EMailLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 4 processes")
	}
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
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	args := []string{"--smtp", relay.Addr(), "--smtp-starttls", "none", "--mail-from", "netmgr@cluster.test"}
	c, err := servertest.StartProcClusterArgs(netmgrBinary(t), filepath.Join(t.TempDir(), "cluster"), 3, 1, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", c.Logs(6000))
		}
	})
	if err := c.WaitLeader(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitMachines(1, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client(client.WithUser(me.Username))
	if err != nil {
		t.Fatal(err)
	}
	c2, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Submit(c2, client.SubmitRequest{Spec: client.JobSpec{
		Name: "mailed", Binaries: map[string]string{client.AnyKey: "/bin/true"}, Mail: "ops@example.org",
	}}); err != nil {
		t.Fatalf("submit: %v", err)
	}
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the relay got no delivery in 60s")
	}
	leader, _ := c.Leader()
	if leader < 0 {
		t.Fatal("no leader while the relay holds the first delivery")
	}
	if err := c.KillServer(leader, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the leader: %v", err)
	}
	// The new leader sends the mail again (the hook holds only the
	// first delivery); then the killed leader's copy is let through.
	relay.WaitMessages(t, 1, 60*time.Second)
	close(release)
	testwait.For(t, 30*time.Second, "the mail recorded sent", func() bool {
		ec, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		evs, err := cl.Events(ec, 0)
		if err != nil {
			return false
		}
		for _, e := range evs {
			if e.Kind == "mail-sent" {
				return true
			}
		}
		return false
	})
	msgs := relay.Messages()
	if len(msgs) < 1 || len(msgs) > 2 {
		t.Fatalf("the relay got %d messages, want 1 or 2", len(msgs))
	}
	for _, m := range msgs[1:] {
		if m.MessageID != msgs[0].MessageID || m.Subject != msgs[0].Subject || m.Body != msgs[0].Body {
			t.Errorf("got a second message %+v, want the first again with Message-ID %s", m, msgs[0].MessageID)
		}
	}
	if msgs[0].To[0] != "ops@example.org" || msgs[0].Subject == "" {
		t.Errorf("got %+v, want the job's end mail to ops@example.org", msgs[0])
	}
	t.Logf("relay holds %d copies of %s: %q", len(msgs), msgs[0].MessageID, msgs[0].Subject)
}
