package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client/pki"
)

// defaultTLSDir is where a server or stub looks for its TLS material when
// no flag names it.
const defaultTLSDir = "/etc/netmgr/tls"

// errNoTLS refuses to start a server or stub without TLS material.
var errNoTLS = errors.New("no TLS material: give --ca-file, --cert-file and --key-file (make them with `netmgr tls ca create` and `netmgr tls cert create`), or --insecure to run without authentication or encryption")

// defaultKeyringFile is the gossip keyring a server or stub with TLS uses
// when no flag names one and the file exists in defaultTLSDir.
const defaultKeyringFile = "gossip.keyring"

// errNoKeyring refuses to start a server or stub with TLS but plaintext
// gossip: whoever reaches the gossip port could then claim members dead
// or alive, and the leader would act on it.
var errNoKeyring = errors.New("no gossip keyring: give --gossip-keyring FILE (make it once with `netmgr tls gossip-key create FILE` and copy it to every server and stub); " +
	"without it, anyone who reaches the gossip port can claim machines dead or alive")

// agentTLSFlags are the security flags of netmgr server and netmgr stub.
// role is "server" or "stub", for the default file names.
func agentTLSFlags(role string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "ca-file", Usage: "cluster CA certificate `FILE` (default " + filepath.Join(defaultTLSDir, pki.CAFile) + " if it exists)"},
		&cli.StringFlag{Name: "cert-file", Usage: "this " + role + "'s certificate `FILE`, made by `netmgr tls cert create --" + role + " NAME`"},
		&cli.StringFlag{Name: "key-file", Usage: "the certificate's key `FILE`"},
		&cli.StringFlag{Name: "gossip-keyring", Usage: "gossip encryption keyring `FILE` (one base64 key per line, the first used to send), made by `netmgr tls gossip-key create`; required with TLS (default " + filepath.Join(defaultTLSDir, defaultKeyringFile) + " if it exists)"},
		&cli.BoolFlag{Name: "insecure", Usage: "run without TLS: plaintext, and anyone who reaches a port may act as any user, root included (a warning is logged at every start)"},
	}
}

// agentTLS loads the TLS material the flags name, or returns nil after a
// warning under --insecure. It refuses to go on with neither.
func agentTLS(cCtx *cli.Context, logger *slog.Logger) (*pki.Material, error) {
	files := pki.Files{CA: cCtx.String("ca-file"), Cert: cCtx.String("cert-file"), Key: cCtx.String("key-file")}
	if cCtx.Bool("insecure") {
		if files != (pki.Files{}) {
			return nil, usagef("--insecure and --ca-file/--cert-file/--key-file contradict each other; give one or the other")
		}
		logger.Warn("running INSECURE (--insecure): no TLS, no authentication; anyone who reaches this process's ports can run jobs as any user, root included, and read all traffic")
		return nil, nil
	}
	if files.CA == "" {
		if _, err := os.Stat(filepath.Join(defaultTLSDir, pki.CAFile)); err == nil {
			files.CA = filepath.Join(defaultTLSDir, pki.CAFile)
		}
	}
	if files.CA == "" || files.Cert == "" || files.Key == "" {
		return nil, usagef("%w", errNoTLS)
	}
	m, err := pki.Load(files)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// agentKeyring returns the gossip keyring file of a server or stub: the
// flag's, else the default file if it exists. A process with TLS
// material (m) must have one; an insecure one may gossip in the clear.
func agentKeyring(cCtx *cli.Context, m *pki.Material) (string, error) {
	if f := cCtx.String("gossip-keyring"); f != "" {
		return f, nil
	}
	if m == nil {
		return "", nil
	}
	def := filepath.Join(defaultTLSDir, defaultKeyringFile)
	if _, err := os.Stat(def); err == nil {
		return def, nil
	}
	return "", usagef("%w", errNoKeyring)
}

// reloadOnHangup calls reload on every SIGHUP until ctx ends, logging the
// outcome: certificates and the gossip keyring are read again without a
// restart.
func reloadOnHangup(ctx context.Context, logger *slog.Logger, reload func() error) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := reload(); err != nil {
					logger.Error("SIGHUP: reload TLS material and gossip keyring; the old ones stay in use", "err", fmt.Errorf("reload: %w", err))
					continue
				}
				logger.Info("SIGHUP: reloaded TLS material and gossip keyring")
			}
		}
	}()
}

// defaultSocket is where a stub listens for its machine's users, and where
// the job commands look for it.
const defaultSocket = "/run/netmgr/stub.sock"

// scheme is the URL scheme of an API served with material m.
func scheme(m *pki.Material) string {
	if m == nil {
		return "http://"
	}
	return "https://"
}
