package mailer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/server/mailer"
	"github.com/netmgr/netmgr/server/mailer/smtptest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

var msg = mailer.Message{
	ID:      "42.end.7",
	To:      []string{"alice", "ops@example.org"},
	Subject: "netmgr job 7 (build) ended: done, exit 0",
	Body:    "netmgr job 7 (build) ended: done, exit 0\n\nJob:        7 (build)\n",
	Date:    time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC),
}

func TestSendThroughSMTP(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	m, err := mailer.New(mailer.Config{SMTP: srv.Addr(), StartTLS: mailer.StartTLSNone, From: "netmgr@cluster.example.org"})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := m.Send(ctx(t), msg); err != nil {
		t.Fatalf("send: %v", err)
	}
	got := srv.WaitMessages(t, 1, 10*time.Second)[0]
	if want := []string{"alice@cluster.example.org", "ops@example.org"}; !slices.Equal(got.To, want) {
		t.Errorf("got recipients %v, want %v (a login completed with the mail domain)", got.To, want)
	}
	if got.From != "netmgr@cluster.example.org" || got.Subject != msg.Subject || got.Body != msg.Body {
		t.Errorf("got from %q subject %q body %q, want %q, %q, %q", got.From, got.Subject, got.Body, "netmgr@cluster.example.org", msg.Subject, msg.Body)
	}
	if want := "<netmgr.42.end.7@cluster.example.org>"; got.MessageID != want || m.MessageID(msg.ID) != want {
		t.Errorf("got Message-ID %q (MessageID says %q), want %q", got.MessageID, m.MessageID(msg.ID), want)
	}
	if got.Header.Get("Auto-Submitted") != "auto-generated" {
		t.Errorf("got Auto-Submitted %q, want auto-generated", got.Header.Get("Auto-Submitted"))
	}
}

func TestSendWithSTARTTLSAndAuth(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := smtptest.Start(t, smtptest.Options{User: "relay", Password: "s3cret", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	base := mailer.Config{SMTP: srv.Addr(), StartTLS: mailer.StartTLSMandatory, From: "netmgr@example.org",
		TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, User: "relay", Password: "s3cret"}
	m, err := mailer.New(base)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := m.Send(ctx(t), msg); err != nil {
		t.Fatalf("send: %v", err)
	}
	srv.WaitMessages(t, 1, 10*time.Second)

	bad := base
	bad.Password = "wrong"
	m, _ = mailer.New(bad)
	if err := m.Send(ctx(t), msg); err == nil {
		t.Errorf("sent with a wrong password, want an error")
	}
	plain := smtptest.Start(t, smtptest.Options{})
	noTLS := mailer.Config{SMTP: plain.Addr(), StartTLS: mailer.StartTLSMandatory, From: "netmgr@example.org"}
	m, _ = mailer.New(noTLS)
	if err := m.Send(ctx(t), msg); err == nil {
		t.Errorf("sent without STARTTLS under the mandatory policy, want an error")
	}
	if n := len(plain.Messages()); n != 0 {
		t.Errorf("the relay without STARTTLS got %d messages, want none", n)
	}
}

func TestSendRefused(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{OnData: func(smtptest.Message) error { return errors.New("mailbox full") }})
	m, _ := mailer.New(mailer.Config{SMTP: srv.Addr(), StartTLS: mailer.StartTLSNone, From: "netmgr@example.org"})
	err := m.Send(ctx(t), msg)
	if err == nil || !strings.Contains(err.Error(), "mailbox full") || !strings.Contains(err.Error(), "send mail 42.end.7") {
		t.Errorf("got %v, want the relay's refusal, naming the mail", err)
	}
}

func TestSendWithSendmail(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	prog := filepath.Join(dir, "sendmail")
	script := "#!/bin/sh\necho \"$@\" > " + out + ".args\ncat > " + out + "\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := mailer.New(mailer.Config{Sendmail: prog, From: "netmgr@example.org"})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	if err := m.Send(ctx(t), msg); err != nil {
		t.Fatalf("send: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("read what sendmail got: %v", err)
	}
	args, _ := os.ReadFile(out + ".args")
	for _, want := range []string{"To: <alice@example.org>, <ops@example.org>", "Message-ID: <netmgr.42.end.7@example.org>", "Subject: " + msg.Subject} {
		if !strings.Contains(string(data), want) {
			t.Errorf("sendmail got:\n%s\nwant it to contain %q", data, want)
		}
	}
	if strings.TrimSpace(string(args)) != "-oi -t" {
		t.Errorf("sendmail ran with %q, want -oi -t", args)
	}
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []mailer.Config{
		{From: "a@b"},
		{SMTP: "h:25", Sendmail: "/usr/sbin/sendmail", From: "a@b"},
		{SMTP: "h:25"},
		{SMTP: "h:25", From: "nodomain"},
		{SMTP: "h", From: "a@b"},
		{SMTP: "h:25", From: "a@b", StartTLS: "sometimes"},
	} {
		if _, err := mailer.New(c); !errors.Is(err, mailer.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtptest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
