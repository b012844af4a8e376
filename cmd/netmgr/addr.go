package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
)

// defaultAddr is where the job commands look for a server when neither
// --addr nor NETMGR_ADDR says otherwise; without a scheme it is https.
const defaultAddr = "127.0.0.1:17646"

// Environment variables the job commands read.
const (
	envAddr       = "NETMGR_ADDR"
	envRetryFor   = "NETMGR_RETRY_FOR"
	envSocket     = "NETMGR_SOCKET"
	envToken      = "NETMGR_TOKEN"
	envCACert     = "NETMGR_CACERT"
	envClientCert = "NETMGR_CLIENT_CERT"
	envClientKey  = "NETMGR_CLIENT_KEY"
)

// errNoUser means the CLI could not tell which user it runs as.
var errNoUser = errors.New("cannot tell which user you are (no user database entry and $USER is empty)")

// clientFlags are the flags of every command that talks to the servers.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    "addr",
			EnvVars: []string{envAddr},
			Value:   defaultAddr,
			Usage:   "server API `URL[,URL...]`; any server of the group will do, the others are tried when it does not answer",
		},
		&cli.StringFlag{
			Name:    "socket",
			EnvVars: []string{envSocket},
			Usage:   "the local stub's Unix socket `PATH` (default " + defaultSocket + " when it exists); through it you act as the user you are logged in as",
		},
		&cli.StringFlag{
			Name:    "ca-file",
			EnvVars: []string{envCACert},
			Usage:   "cluster CA certificate `FILE` for reaching the servers directly with a token or client certificate (default " + defaultTLSDir + "/ca.pem)",
		},
		&cli.StringFlag{
			Name:    "client-cert",
			EnvVars: []string{envClientCert},
			Usage:   "client certificate `FILE` (netmgr tls cert create --client USER) to act as its user",
		},
		&cli.StringFlag{
			Name:    "client-key",
			EnvVars: []string{envClientKey},
			Usage:   "the client certificate's key `FILE`",
		},
		&cli.DurationFlag{
			Name:    "retry-for",
			EnvVars: []string{envRetryFor},
			Value:   client.DefaultRetryFor,
			Usage:   "how long (`DURATION`) to keep trying while no server answers or the group has no leader (e.g. 500ms, 1m)",
		},
	}
}

// newClient builds a client for the servers, acting as the user the
// servers can verify (see credentials).
func newClient(cCtx *cli.Context) (*client.Client, error) {
	retry := cCtx.Duration("retry-for")
	if retry < 0 {
		return nil, usagef("--retry-for must not be negative, got %v", retry)
	}
	ri := runInfoFrom(cCtx.Context)
	ri.addrGuessed = !cCtx.IsSet("addr") && !cCtx.IsSet("socket")
	auth, err := credentials(cCtx)
	if err != nil {
		return nil, err
	}
	opts := append(auth, client.WithRetryFor(retry), waitNotice(ri, cCtx.App.ErrWriter))
	if ri.addrGuessed {
		opts = append(opts, client.WithGiveUpUnanswered(guessedAddrGrace))
	}
	c, err := client.New([]string{cCtx.String("addr")}, opts...)
	if err != nil {
		return nil, usagef("--addr: %w", err)
	}
	return c, nil
}

// currentUser returns the name of the user the CLI runs as.
func currentUser() (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if name := os.Getenv("USER"); name != "" {
		return name, nil
	}
	return "", errNoUser
}

// retryNote is appended to the help of every client command.
var retryNote = fmt.Sprintf("The servers are found from --addr or $%s (default %s).\n"+
	"--retry-for or $%s (default %v) is how long to keep trying while no\n"+
	"server answers or the group is electing a leader; after a second a command\n"+
	"says what it waits for. With no address given (neither --addr, --socket nor\n"+
	"their variables), a command that finds no server says so at once.",
	envAddr, defaultAddr, envRetryFor, client.DefaultRetryFor)
