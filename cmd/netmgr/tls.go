package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client/pki"
)

// tlsCommand makes the cluster's CA and certificates.
func tlsCommand() *cli.Command {
	return &cli.Command{
		Name:  "tls",
		Usage: "make the cluster's CA, certificates and gossip key",
		Description: "Every link of a cluster is TLS 1.3 from one CA. Make the CA once, on an admin's\n" +
			"machine, and keep its key (ca-key.pem) there; copy ca.pem and each certificate\n" +
			"and key to the machine it names:\n\n" +
			"   netmgr tls ca create --dir ca\n" +
			"   netmgr tls cert create --ca-dir ca --server s1 --host 10.0.0.1\n" +
			"   netmgr tls cert create --ca-dir ca --stub flute --host flute.example.org\n" +
			"   netmgr tls cert create --ca-dir ca --client alice\n\n" +
			"A certificate's subject names its role and name (openssl x509 -noout -subject\n" +
			"-in stub-flute.pem shows O=netmgr, OU=stub, CN=flute). Standard PEM files;\n" +
			"keys are written mode 0600 and nothing is overwritten.",
		Subcommands: []*cli.Command{
			{
				Name:  "ca",
				Usage: "make the cluster CA",
				Subcommands: []*cli.Command{{
					Name:      "create",
					Usage:     "make a new CA: DIR/ca.pem (give to every machine) and DIR/ca-key.pem (keep secret)",
					UsageText: "netmgr tls ca create [--dir DIR] [--days N] [--name NAME]",
					Flags: []cli.Flag{
						&cli.StringFlag{Name: "dir", Value: ".", Usage: "`DIR` to write ca.pem and ca-key.pem into"},
						&cli.IntFlag{Name: "days", Value: int(pki.DefaultCAValidity / (24 * time.Hour)), Usage: "how many `DAYS` the CA is valid"},
						&cli.StringFlag{Name: "name", Value: "netmgr cluster CA", Usage: "the CA's common `NAME`"},
					},
					Action: runTLSCACreate,
				}},
			},
			{
				Name:  "cert",
				Usage: "make a certificate signed by the cluster CA",
				Subcommands: []*cli.Command{{
					Name:  "create",
					Usage: "make a server, stub or client certificate: DIR/ROLE-NAME.pem and DIR/ROLE-NAME-key.pem",
					UsageText: "netmgr tls cert create --ca-dir DIR (--server NAME | --stub MACHINE | --client USER)\n" +
						"    [--host NAME_OR_IP ...] [--out DIR] [--days N]",
					Description: "--server NAME: a member of the server group (NAME is its --name).\n" +
						"--stub MACHINE: the stub of MACHINE (its --name); it may report only that\n" +
						"machine's jobs, and vouches for that machine's users.\n" +
						"--client USER: acts as USER from anywhere (a program, a laptop); users on a\n" +
						"pool machine need none, and tokens (netmgr token create) are the usual way in\n" +
						"from outside.\n\n" +
						"--host adds a DNS name or IP address the certificate serves under, so that\n" +
						"curl and openssl can check the host name too; localhost, 127.0.0.1 and ::1\n" +
						"are always in server and stub certificates. netmgr itself checks peers by the\n" +
						"CA and the role and name in the certificate, not by host name.",
					Flags: []cli.Flag{
						&cli.StringFlag{Name: "ca-dir", Value: ".", Usage: "`DIR` holding ca.pem and ca-key.pem"},
						&cli.StringFlag{Name: "server", Usage: "make a server certificate for server `NAME`"},
						&cli.StringFlag{Name: "stub", Usage: "make a stub certificate for `MACHINE`"},
						&cli.StringFlag{Name: "client", Usage: "make a client certificate for `USER`"},
						&cli.StringSliceFlag{Name: "host", Usage: "DNS name or IP `ADDRESS` the certificate serves under (repeat or comma-separate)"},
						&cli.StringFlag{Name: "out", Usage: "`DIR` to write into (default: --ca-dir)"},
						&cli.IntFlag{Name: "days", Value: int(pki.DefaultCertValidity / (24 * time.Hour)), Usage: "how many `DAYS` the certificate is valid"},
					},
					Action: runTLSCertCreate,
				}},
			},
			gossipKeyCommand(),
		},
	}
}

func runTLSCACreate(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q", cCtx.Args().First())
	}
	days := cCtx.Int("days")
	if days <= 0 {
		return usagef("--days must be positive, got %d", days)
	}
	ca, err := pki.NewCA(cCtx.String("name"), time.Duration(days)*24*time.Hour)
	if err != nil {
		return err
	}
	dir := cCtx.String("dir")
	if err := ca.Write(dir); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	fmt.Fprintf(cCtx.App.Writer, "wrote %s/%s (copy to every machine) and %s/%s (keep it here, secret), valid until %s\n",
		dir, pki.CAFile, dir, pki.CAKeyFile, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	return nil
}

func runTLSCertCreate(cCtx *cli.Context) error {
	if cCtx.Args().Present() {
		return usagef("unexpected argument %q", cCtx.Args().First())
	}
	var ids []pki.Identity
	for _, r := range pki.Roles {
		if name := cCtx.String(string(r)); name != "" {
			ids = append(ids, pki.Identity{Role: r, Name: name})
		}
	}
	if len(ids) != 1 {
		return usagef("give exactly one of --server NAME, --stub MACHINE or --client USER")
	}
	days := cCtx.Int("days")
	if days <= 0 {
		return usagef("--days must be positive, got %d", days)
	}
	ca, err := pki.LoadCA(cCtx.String("ca-dir"))
	if err != nil {
		return err
	}
	is, err := ca.Issue(ids[0], splitList(cCtx.StringSlice("host")), time.Duration(days)*24*time.Hour)
	if err != nil {
		return err
	}
	out := cCtx.String("out")
	if out == "" {
		out = cCtx.String("ca-dir")
	}
	files, err := is.Write(out)
	if err != nil {
		return fmt.Errorf("create certificate: %w", err)
	}
	flag := "--cert-file"
	if ids[0].Role == pki.RoleClient {
		fmt.Fprintf(cCtx.App.Writer, "wrote %s and %s for %s\nuse them with: export NETMGR_CLIENT_CERT=%s NETMGR_CLIENT_KEY=%s NETMGR_CACERT=CA.pem\n",
			files.Cert, files.Key, ids[0], files.Cert, files.Key)
		return nil
	}
	fmt.Fprintf(cCtx.App.Writer, "wrote %s and %s for %s\nuse them with: netmgr %s --ca-file ca.pem %s %s --key-file %s\n",
		files.Cert, files.Key, ids[0], ids[0].Role, flag, files.Cert, files.Key)
	return nil
}
