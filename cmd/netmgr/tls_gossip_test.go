package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client/pki"
)

func readKeys(t *testing.T, path string) [][]byte {
	t.Helper()
	keys, err := pki.ReadKeyring(path)
	if err != nil {
		t.Fatalf("read keyring: %v", err)
	}
	return keys
}

// The rotation the help describes, step by step, on one file.
func TestGossipKeyRotationSteps(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keyring")
	gk := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"netmgr", "tls", "gossip-key"}, args...)...)
	}

	code, stdout, stderr := gk("create", file)
	if code != exitOK {
		t.Fatalf("create: exit %d, stderr %q", code, stderr)
	}
	keys := readKeys(t, file)
	a := keys[0]
	if len(keys) != 1 || !strings.Contains(stdout, "wrote "+file+" with key "+pki.KeyID(a)) {
		t.Fatalf("create: %d keys, stdout %q", len(keys), stdout)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("create: mode %v, err %v; want 0600", st.Mode().Perm(), err)
	}

	t.Run("create refuses to replace", func(t *testing.T) {
		code, _, stderr := gk("create", file)
		if code != exitError || !strings.Contains(stderr, "file exists") || !strings.Contains(stderr, "--force") {
			t.Fatalf("exit %d, stderr %q; want exit 1 naming --force", code, stderr)
		}
		if got := readKeys(t, file); len(got) != 1 || !bytes.Equal(got[0], a) {
			t.Fatal("the refused create changed the file")
		}
	})

	code, stdout, stderr = gk("add", file)
	keys = readKeys(t, file)
	if code != exitOK || len(keys) != 2 || !bytes.Equal(keys[0], a) {
		t.Fatalf("add: exit %d, %d keys, stderr %q; want a first of two", code, len(keys), stderr)
	}
	b := keys[1]
	want := "N   ID        USE\n" +
		"1   " + pki.KeyID(a) + "  send and read\n" +
		"2   " + pki.KeyID(b) + "  read\n"
	if !strings.HasSuffix(stdout, want) || !strings.Contains(stdout, "gossip-key use "+file+" 2") {
		t.Fatalf("add: stdout %q, want the next step and the listing %q", stdout, want)
	}

	code, stdout, stderr = gk("use", file, "2")
	keys = readKeys(t, file)
	if code != exitOK || len(keys) != 2 || !bytes.Equal(keys[0], b) || !bytes.Equal(keys[1], a) {
		t.Fatalf("use 2: exit %d, stderr %q; want b then a", code, stderr)
	}
	if !strings.Contains(stdout, "gossip-key remove "+file+" 2") {
		t.Fatalf("use: stdout %q, want the next step", stdout)
	}

	t.Run("the first key stays", func(t *testing.T) {
		code, _, stderr := gk("remove", file, "1")
		if code != exitError || !strings.Contains(stderr, "key 1 is the one members send with") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if len(readKeys(t, file)) != 2 {
			t.Fatal("the refused remove changed the file")
		}
	})

	code, stdout, stderr = gk("remove", file, "2")
	keys = readKeys(t, file)
	if code != exitOK || len(keys) != 1 || !bytes.Equal(keys[0], b) {
		t.Fatalf("remove 2: exit %d, stderr %q; want b alone", code, stderr)
	}
	if !strings.Contains(stdout, "removed key 2 ("+pki.KeyID(a)+")") {
		t.Fatalf("remove: stdout %q", stdout)
	}

	code, stdout, _ = gk("list", file)
	if want := "N   ID        USE\n1   " + pki.KeyID(b) + "  send and read\n"; code != exitOK || stdout != want {
		t.Fatalf("list: exit %d, stdout %q, want %q", code, stdout, want)
	}

	code, _, stderr = gk("create", "--force", file)
	if code != exitOK || bytes.Equal(readKeys(t, file)[0], b) {
		t.Fatalf("create --force: exit %d, stderr %q; want a new key", code, stderr)
	}
}

func TestGossipKeyUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keyring")
	if err := pki.WriteKeyring(file, [][]byte{pki.NewGossipKey(), pki.NewGossipKey()}, false); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("c2hvcnQ=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no command", nil, exitUsage, "no gossip-key command given"},
		{"unknown command", []string{"rotate"}, exitUsage, `unknown gossip-key command "rotate"`},
		{"create without FILE", []string{"create"}, exitUsage, "want FILE, got 0 arguments"},
		{"use without N", []string{"use", file}, exitUsage, "want FILE N, got 1 arguments"},
		{"use N out of range", []string{"use", file, "3"}, exitUsage, "N must be a key of " + file + ", 1 to 2"},
		{"remove N not a number", []string{"remove", file, "two"}, exitUsage, `got "two"`},
		{"add to a missing file", []string{"add", filepath.Join(dir, "missing")}, exitError, "no such file"},
		{"list a bad file", []string{"list", bad}, exitError, "line 1: bad gossip keyring: a key is 5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"netmgr", "tls", "gossip-key"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want exit %d containing %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
	if got := readKeys(t, file); len(got) != 2 {
		t.Fatalf("refused commands changed the file: %d keys", len(got))
	}
}

func TestGossipKeyHelpTellsTheRotation(t *testing.T) {
	code, stdout, stderr := runCLI(t, "netmgr", "tls", "gossip-key", "--help")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"netmgr tls gossip-key add keyring",
		"netmgr tls gossip-key use keyring 2",
		"netmgr tls gossip-key remove keyring 2",
		"SIGHUP",
		"finish a step everywhere before the\nnext",
	} {
		if !strings.Contains(strings.ReplaceAll(stdout, "\n   ", "\n"), want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
}
