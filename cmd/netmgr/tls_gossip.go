package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/netmgr/netmgr/client/pki"
)

// gossipKeyRotation is the rotation procedure, shown by gossip-key --help.
const gossipKeyRotation = "Every server and stub encrypts gossip with the first key of its\n" +
	"--gossip-keyring file and reads gossip encrypted with any key in it. A member\n" +
	"that cannot read a peer's gossip refuses it and logs 'gossip refused'.\n\n" +
	"Make the file once, on one machine, and copy it (mode 0600) to every server\n" +
	"and stub, at the path their --gossip-keyring names:\n\n" +
	"   netmgr tls gossip-key create keyring\n\n" +
	"To replace the key without a moment in which two members cannot read each\n" +
	"other, change the file in three steps. After each, copy it to every member\n" +
	"and send each one SIGHUP (kill -HUP PID); finish a step everywhere before the\n" +
	"next:\n\n" +
	"   1. netmgr tls gossip-key add keyring      a new key, second: every member\n" +
	"                                             reads it, none sends with it yet\n" +
	"   2. netmgr tls gossip-key use keyring 2    the new key first: members send\n" +
	"                                             with it, and all can read it\n" +
	"   3. netmgr tls gossip-key remove keyring 2 the old key (now second) goes:\n" +
	"                                             whoever holds only it is out\n\n" +
	"Each member logs 'gossip keyring reloaded' with what changed; keys are named\n" +
	"by an ID (the start of their SHA-256), never shown. 'list' shows the file."

// gossipKeyCommand is `netmgr tls gossip-key`: make and rotate the gossip
// keyring file.
func gossipKeyCommand() *cli.Command {
	return &cli.Command{
		Name:  "gossip-key",
		Usage: "make and rotate the gossip encryption keyring",
		UsageText: "netmgr tls gossip-key create [--force] FILE\n" +
			"netmgr tls gossip-key add FILE\n" +
			"netmgr tls gossip-key use FILE N\n" +
			"netmgr tls gossip-key remove FILE N\n" +
			"netmgr tls gossip-key list FILE",
		Description: gossipKeyRotation,
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "write a new keyring FILE holding one new key",
				UsageText: "netmgr tls gossip-key create [--force] FILE",
				Description: "Writes FILE (mode 0600) with one new random 32-byte key (AES-256). It\n" +
					"refuses to replace an existing FILE unless --force is given: members still\n" +
					"on the old keys could then no longer read those with the new file.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "force", Usage: "replace FILE if it exists"},
				},
				Action:       runGossipKeyCreate,
				OnUsageError: onUsageError,
			},
			{
				Name:      "add",
				Usage:     "add a new key to FILE, second: members read it but do not send with it yet (rotation step 1)",
				UsageText: "netmgr tls gossip-key add FILE",
				Action: func(cCtx *cli.Context) error {
					return editKeyring(cCtx, 1, func(keys [][]byte, _ int) ([][]byte, string, error) {
						key := pki.NewGossipKey()
						keys = slices.Insert(keys, 1, key)
						return keys, fmt.Sprintf("added key 2 (%s): once they reload the file, members read it but do not send with it yet.\n"+
							"Next: copy %s to every server and stub and SIGHUP each; then netmgr tls gossip-key use %[2]s 2",
							pki.KeyID(key), cCtx.Args().First()), nil
					})
				},
				OnUsageError: onUsageError,
			},
			{
				Name:      "use",
				Usage:     "make key N of FILE the one members send with (rotation step 2)",
				UsageText: "netmgr tls gossip-key use FILE N",
				Description: "Moves key N to the front of FILE; the key that was first becomes second.\n" +
					"Every member must hold key N already (step 1, done everywhere).",
				Action: func(cCtx *cli.Context) error {
					return editKeyring(cCtx, 2, func(keys [][]byte, n int) ([][]byte, string, error) {
						key := keys[n-1]
						keys = append([][]byte{key}, slices.Delete(keys, n-1, n)...)
						return keys, fmt.Sprintf("key %s now comes first: once they reload the file, members send with it.\n"+
							"Next: copy %s to every server and stub and SIGHUP each; then netmgr tls gossip-key remove %[2]s 2",
							pki.KeyID(key), cCtx.Args().First()), nil
					})
				},
				OnUsageError: onUsageError,
			},
			{
				Name:      "remove",
				Usage:     "remove key N from FILE (rotation step 3)",
				UsageText: "netmgr tls gossip-key remove FILE N",
				Description: "Removes key N. The first key, the one members send with, cannot be removed:\n" +
					"make another one first with 'use'. A member that holds only the removed key\n" +
					"can no longer join once the file is reloaded everywhere.",
				Action: func(cCtx *cli.Context) error {
					return editKeyring(cCtx, 2, func(keys [][]byte, n int) ([][]byte, string, error) {
						if n == 1 {
							return nil, "", errors.New("key 1 is the one members send with; make another key first with 'netmgr tls gossip-key use FILE N', reload everywhere, then remove it")
						}
						id := pki.KeyID(keys[n-1])
						return slices.Delete(keys, n-1, n), fmt.Sprintf("removed key %d (%s).\nNext: copy %s to every server and stub and SIGHUP each",
							n, id, cCtx.Args().First()), nil
					})
				},
				OnUsageError: onUsageError,
			},
			{
				Name:      "list",
				Usage:     "show the keys of FILE by ID, the one members send with first",
				UsageText: "netmgr tls gossip-key list FILE",
				Action: func(cCtx *cli.Context) error {
					if cCtx.NArg() != 1 {
						return usagef("want FILE, got %d arguments", cCtx.NArg())
					}
					keys, err := pki.ReadKeyring(cCtx.Args().First())
					if err != nil {
						return err
					}
					printKeyring(cCtx.App.Writer, keys)
					return nil
				},
				OnUsageError: onUsageError,
			},
		},
		Action: func(cCtx *cli.Context) error {
			if cCtx.Args().Present() {
				return usagef("unknown gossip-key command %q (create, add, use, remove or list)", cCtx.Args().First())
			}
			_ = cli.ShowSubcommandHelp(cCtx)
			return usagef("no gossip-key command given (create, add, use, remove or list)")
		},
		OnUsageError: onUsageError,
	}
}

func runGossipKeyCreate(cCtx *cli.Context) error {
	if cCtx.NArg() != 1 {
		return usagef("want FILE, got %d arguments", cCtx.NArg())
	}
	path := cCtx.Args().First()
	key := pki.NewGossipKey()
	if err := pki.WriteKeyring(path, [][]byte{key}, cCtx.Bool("force")); err != nil {
		if errors.Is(err, pki.ErrExists) {
			return fmt.Errorf("%w (add, use and remove change a keyring; --force replaces it)", err)
		}
		return err
	}
	fmt.Fprintf(cCtx.App.Writer, "wrote %s with key %s.\nCopy it (mode 0600) to every server and stub and give it as --gossip-keyring %[1]s\n",
		path, pki.KeyID(key))
	return nil
}

// editKeyring reads the keyring FILE (the first argument), lets edit
// change its keys, writes them back in place and prints what edit said
// and the keys. nargs is 1 (FILE) or 2 (FILE N); N is passed to edit,
// checked to name a key (0 without it).
func editKeyring(cCtx *cli.Context, nargs int, edit func(keys [][]byte, n int) ([][]byte, string, error)) error {
	want := "FILE"
	if nargs == 2 {
		want = "FILE N"
	}
	if cCtx.NArg() != nargs {
		return usagef("want %s, got %d arguments", want, cCtx.NArg())
	}
	path := cCtx.Args().First()
	keys, err := pki.ReadKeyring(path)
	if err != nil {
		return err
	}
	n := 0
	if nargs == 2 {
		n, err = strconv.Atoi(cCtx.Args().Get(1))
		if err != nil || n < 1 || n > len(keys) {
			return usagef("N must be a key of %s, 1 to %d ('netmgr tls gossip-key list %s' shows them); got %q",
				path, len(keys), path, cCtx.Args().Get(1))
		}
	}
	keys, said, err := edit(keys, n)
	if err != nil {
		return err
	}
	if err := pki.WriteKeyring(path, keys, true); err != nil {
		return err
	}
	fmt.Fprintln(cCtx.App.Writer, said)
	printKeyring(cCtx.App.Writer, keys)
	return nil
}

// printKeyring lists keys by number and ID.
func printKeyring(w io.Writer, keys [][]byte) {
	fmt.Fprintf(w, "%-3s %-8s  %s\n", "N", "ID", "USE")
	for i, k := range keys {
		use := "read"
		if i == 0 {
			use = "send and read"
		}
		fmt.Fprintf(w, "%-3d %-8s  %s\n", i+1, pki.KeyID(k), use)
	}
}
