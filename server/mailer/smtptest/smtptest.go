// Package smtptest runs a real SMTP server (emersion/go-smtp) on a
// loopback port for tests: it accepts mail, optionally over STARTTLS and
// with PLAIN authentication, and keeps each message it accepted, parsed,
// for the test to check.
package smtptest

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted.
type Message struct {
	From      string
	To        []string
	MessageID string
	Subject   string
	Body      string
	Header    mail.Header
}

// Options configure a Server.
type Options struct {
	// User and Password, when User is set, are the only credentials the
	// server accepts, and mail is refused until a client authenticates.
	User, Password string
	// TLS, when set, offers STARTTLS with this configuration.
	TLS *tls.Config
	// OnData, when set, is called with each message before it is
	// accepted; an error refuses it (the client sees a 554). It may
	// block, to hold a sender in the middle of a delivery.
	OnData func(Message) error
}

// Server is a running SMTP server.
type Server struct {
	srv  *smtp.Server
	ln   net.Listener
	opts Options

	mu       sync.Mutex
	messages []Message
	changed  chan struct{}
}

// Start runs a server on 127.0.0.1 and stops it when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("smtptest: listen: %v", err)
	}
	s := &Server{ln: ln, opts: opts, changed: make(chan struct{})}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	s.srv.Domain = "smtptest.localhost"
	s.srv.AllowInsecureAuth = opts.TLS == nil
	s.srv.TLSConfig = opts.TLS
	s.srv.ReadTimeout = 30 * time.Second
	s.srv.WriteTimeout = 30 * time.Second
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.srv.Serve(ln)
	}()
	tb.Cleanup(func() {
		_ = s.srv.Close()
		<-done
	})
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Messages returns the messages accepted so far, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

// WaitMessages waits until at least n messages were accepted, failing
// the test after timeout, and returns them all.
func (s *Server) WaitMessages(tb testing.TB, n int, timeout time.Duration) []Message {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, changed := slices.Clone(s.messages), s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("smtptest: got %d messages after %v, want %d: %+v", len(got), timeout, n, got)
		}
	}
}

func (s *Server) accept(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, m)
	close(s.changed)
	s.changed = make(chan struct{})
}

// session is one SMTP connection's transaction.
type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

var _ smtp.AuthSession = (*session)(nil)

func (c *session) AuthMechanisms() []string {
	if c.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (c *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != c.s.opts.User || pass != c.s.opts.Password {
			return errors.New("invalid credentials")
		}
		c.authed = true
		return nil
	}), nil
}

func (c *session) Mail(from string, _ *smtp.MailOptions) error {
	if c.s.opts.User != "" && !c.authed {
		return smtp.ErrAuthRequired
	}
	c.from = from
	return nil
}

func (c *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	c.to = append(c.to, to)
	return nil
}

func (c *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := parse(raw)
	if err != nil {
		return &smtp.SMTPError{Code: 554, Message: err.Error()}
	}
	m.From, m.To = c.from, slices.Clone(c.to)
	if c.s.opts.OnData != nil {
		if err := c.s.opts.OnData(m); err != nil {
			return &smtp.SMTPError{Code: 554, Message: err.Error()}
		}
	}
	c.s.accept(m)
	return nil
}

func (c *session) Reset()        { c.from, c.to = "", nil }
func (c *session) Logout() error { return nil }

// parse reads a message's headers and decodes its text body.
func parse(raw []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, fmt.Errorf("parse message: %w", err)
	}
	body := msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return Message{}, fmt.Errorf("read body: %w", err)
	}
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		return Message{}, fmt.Errorf("decode subject: %w", err)
	}
	return Message{
		MessageID: msg.Header.Get("Message-Id"),
		Subject:   subject,
		Body:      strings.ReplaceAll(string(b), "\r\n", "\n"),
		Header:    msg.Header,
	}, nil
}
