package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/pki"
)

// tokenFile is where a user may keep a token, under their home directory.
const tokenFile = ".config/netmgr/token"

// errNoWayIn is the error of a client that has no way to prove who it is.
var errNoWayIn = errors.New("no way to prove who you are: run this on a machine of the pool (its stub's socket " +
	defaultSocket + ", or $" + envSocket + "), or set $" + envToken + " to a token from an admin (netmgr token create) and $" +
	envCACert + " to the cluster's ca.pem; for a cluster started with --insecure, give --addr http://HOST:PORT")

// credentials works out how the job commands prove who runs them, in this
// order: a token ($NETMGR_TOKEN or ~/.config/netmgr/token) or a client
// certificate, over TLS straight to the servers; the stub socket named by
// --socket; for an http:// address, the insecure mode's header; the
// default stub socket when it exists.
func credentials(cCtx *cli.Context) ([]client.Option, error) {
	token, err := findToken()
	if err != nil {
		return nil, err
	}
	certFile, keyFile := cCtx.String("client-cert"), cCtx.String("client-key")
	socket := cCtx.String("socket")
	switch {
	case token != "" || certFile != "" || keyFile != "":
		caFile := cCtx.String("ca-file")
		if caFile == "" {
			caFile = filepath.Join(defaultTLSDir, pki.CAFile)
		}
		m, err := pki.Load(pki.Files{CA: caFile, Cert: certFile, Key: keyFile})
		if err != nil {
			return nil, fmt.Errorf("%w (set $%s to the cluster's ca.pem)", err, envCACert)
		}
		opts := []client.Option{client.WithTLS(m)}
		if token != "" {
			opts = append(opts, client.WithToken(token))
		}
		return opts, nil
	case socket != "":
		return []client.Option{client.WithUnixSocket(socket)}, nil
	case strings.HasPrefix(cCtx.String("addr"), "http://"):
		who, err := currentUser()
		if err != nil {
			return nil, err
		}
		return []client.Option{client.WithUser(who)}, nil
	}
	if fi, err := os.Stat(defaultSocket); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return []client.Option{client.WithUnixSocket(defaultSocket)}, nil
	}
	return nil, errNoWayIn
}

// findToken returns $NETMGR_TOKEN, or the token in ~/.config/netmgr/token,
// or "" when there is neither. A token file others may read is refused.
func findToken() (string, error) {
	if t := strings.TrimSpace(os.Getenv(envToken)); t != "" {
		return t, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", nil //nolint:nilerr // no home, no token file
	}
	path := filepath.Join(home, tokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		return "", nil //nolint:nilerr // no token file
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s: others may read it (mode %v); chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}
