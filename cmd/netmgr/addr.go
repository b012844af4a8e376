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
// --addr nor NETMGR_ADDR says otherwise.
const defaultAddr = "http://127.0.0.1:4646"

// Environment variables the job commands read.
const (
	envAddr     = "NETMGR_ADDR"
	envRetryFor = "NETMGR_RETRY_FOR"
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
		&cli.DurationFlag{
			Name:    "retry-for",
			EnvVars: []string{envRetryFor},
			Value:   client.DefaultRetryFor,
			Usage:   "how long (`DURATION`) to keep trying while no server answers or the group has no leader (e.g. 500ms, 1m)",
		},
	}
}

// newClient builds a client for the servers of --addr, acting as the
// current OS user.
func newClient(cCtx *cli.Context) (*client.Client, error) {
	who, err := currentUser()
	if err != nil {
		return nil, err
	}
	retry := cCtx.Duration("retry-for")
	if retry < 0 {
		return nil, usagef("--retry-for must not be negative, got %v", retry)
	}
	c, err := client.New([]string{cCtx.String("addr")}, client.WithUser(who), client.WithRetryFor(retry))
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
	"server answers or the group is electing a leader.",
	envAddr, defaultAddr, envRetryFor, client.DefaultRetryFor)
