package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// STARTTLS policies for an SMTP relay.
const (
	// StartTLSMandatory refuses to send unless the relay offers STARTTLS.
	StartTLSMandatory = "mandatory"
	// StartTLSOpportunistic uses STARTTLS when the relay offers it.
	StartTLSOpportunistic = "opportunistic"
	// StartTLSNone never uses STARTTLS.
	StartTLSNone = "none"
)

// Config says how mail leaves this server. Exactly one of SMTP and
// Sendmail is set for a server that sends mail.
type Config struct {
	// SMTP is the relay's host:port.
	SMTP string
	// User and Password authenticate to the relay when User is set (the
	// mechanism is the strongest both sides support).
	User     string
	Password string
	// StartTLS is the STARTTLS policy (StartTLSMandatory,
	// StartTLSOpportunistic or StartTLSNone); "" is opportunistic.
	StartTLS string
	// TLS verifies the relay's certificate; nil uses the system roots
	// and the relay's host name.
	TLS *tls.Config
	// Sendmail is a sendmail-compatible program (it is run with -oi -t
	// and reads the recipients from the message).
	Sendmail string
	// From is the sender's address.
	From string
	// Domain completes recipients given as a login ("alice" mails
	// alice@Domain) and names the messages (Message-IDs end in @Domain).
	// "" is From's domain.
	Domain string
	// Timeout bounds one delivery; 30 s when zero.
	Timeout time.Duration
}

// Message is one message to send.
type Message struct {
	// ID is the message's identity; its Message-ID is <netmgr.ID@Domain>,
	// so sending it again makes a message a mail client sees as the same.
	ID      string
	To      []string
	Subject string
	Body    string
	// Date is the message's date: when its event happened.
	Date time.Time
}

// Mailer sends messages. Safe for concurrent use.
type Mailer struct {
	cfg  Config
	port int
	host string
}

// ErrConfig means a mail configuration cannot work.
var ErrConfig = errors.New("mail configuration")

// New checks cfg and returns a Mailer.
func New(cfg Config) (*Mailer, error) {
	switch {
	case cfg.SMTP == "" && cfg.Sendmail == "":
		return nil, fmt.Errorf("%w: set an SMTP relay or a sendmail program", ErrConfig)
	case cfg.SMTP != "" && cfg.Sendmail != "":
		return nil, fmt.Errorf("%w: set an SMTP relay or a sendmail program, not both", ErrConfig)
	case cfg.From == "":
		return nil, fmt.Errorf("%w: the sender's address (--mail-from) is required", ErrConfig)
	}
	if cfg.Domain == "" {
		_, d, ok := strings.Cut(cfg.From, "@")
		if !ok || d == "" {
			return nil, fmt.Errorf("%w: --mail-from %q has no domain; set --mail-domain", ErrConfig, cfg.From)
		}
		cfg.Domain = strings.Trim(d, "> ")
	}
	switch cfg.StartTLS {
	case "":
		cfg.StartTLS = StartTLSOpportunistic
	case StartTLSMandatory, StartTLSOpportunistic, StartTLSNone:
	default:
		return nil, fmt.Errorf("%w: STARTTLS policy %q: want mandatory, opportunistic or none", ErrConfig, cfg.StartTLS)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	m := &Mailer{cfg: cfg}
	if cfg.SMTP != "" {
		host, port, err := net.SplitHostPort(cfg.SMTP)
		if err != nil {
			return nil, fmt.Errorf("%w: SMTP relay %q: %w", ErrConfig, cfg.SMTP, err)
		}
		if m.port, err = strconv.Atoi(port); err != nil || m.port <= 0 || m.port > 65535 {
			return nil, fmt.Errorf("%w: SMTP relay %q: bad port", ErrConfig, cfg.SMTP)
		}
		m.host = host
	}
	return m, nil
}

// MessageID is the Message-ID header value of the message whose ID is id.
func (m *Mailer) MessageID(id string) string { return "<netmgr." + id + "@" + m.cfg.Domain + ">" }

// Recipient completes a recipient: a login gets the mail domain.
func (m *Mailer) Recipient(to string) string {
	if strings.Contains(to, "@") {
		return to
	}
	return to + "@" + m.cfg.Domain
}

// build makes the go-mail message.
func (m *Mailer) build(msg Message) (*gomail.Msg, error) {
	out := gomail.NewMsg()
	if err := out.From(m.cfg.From); err != nil {
		return nil, fmt.Errorf("sender %q: %w", m.cfg.From, err)
	}
	to := make([]string, len(msg.To))
	for i, t := range msg.To {
		to[i] = m.Recipient(t)
	}
	if err := out.To(to...); err != nil {
		return nil, fmt.Errorf("recipients %v: %w", to, err)
	}
	out.Subject(msg.Subject)
	out.SetMessageIDWithValue("netmgr." + msg.ID + "@" + m.cfg.Domain)
	out.SetDateWithValue(msg.Date)
	out.SetGenHeader("Auto-Submitted", "auto-generated")
	out.SetBodyString(gomail.TypeTextPlain, msg.Body)
	return out, nil
}

// Send delivers one message, within the configured timeout.
func (m *Mailer) Send(ctx context.Context, msg Message) error {
	out, err := m.build(msg)
	if err != nil {
		return fmt.Errorf("send mail %s: %w", msg.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	if m.cfg.Sendmail != "" {
		if err := out.WriteToSendmailWithContext(ctx, m.cfg.Sendmail); err != nil {
			return fmt.Errorf("send mail %s with %s: %w", msg.ID, m.cfg.Sendmail, err)
		}
		return nil
	}
	c, err := m.client()
	if err != nil {
		return fmt.Errorf("send mail %s: %w", msg.ID, err)
	}
	if err := c.DialAndSendWithContext(ctx, out); err != nil {
		return fmt.Errorf("send mail %s through %s: %w", msg.ID, m.cfg.SMTP, err)
	}
	return nil
}

// client makes an SMTP client for one delivery.
func (m *Mailer) client() (*gomail.Client, error) {
	policy := gomail.TLSOpportunistic
	switch m.cfg.StartTLS {
	case StartTLSMandatory:
		policy = gomail.TLSMandatory
	case StartTLSNone:
		policy = gomail.NoTLS
	}
	opts := []gomail.Option{
		gomail.WithPort(m.port),
		gomail.WithTLSPolicy(policy),
		gomail.WithTimeout(m.cfg.Timeout),
	}
	if m.cfg.TLS != nil {
		opts = append(opts, gomail.WithTLSConfig(m.cfg.TLS))
	} else {
		opts = append(opts, gomail.WithTLSConfig(&tls.Config{ServerName: m.host, MinVersion: tls.VersionTLS12}))
	}
	if m.cfg.User != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(m.cfg.User), gomail.WithPassword(m.cfg.Password))
	}
	c, err := gomail.NewClient(m.host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp client for %s: %w", m.cfg.SMTP, err)
	}
	return c, nil
}
