package pki_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client/pki"
)

func b64(n int, fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, n))
}

func TestReadKeyring(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    [][]byte
		wantErr string // substring of the error; "" for none
	}{
		{
			name: "one key",
			text: b64(32, 1) + "\n",
			want: [][]byte{bytes.Repeat([]byte{1}, 32)},
		},
		{
			name: "comments, blanks and spaces; first is primary",
			text: "# rotated 2024-05\n\n  " + b64(32, 2) + "  \n# old\n" + b64(16, 3) + "\n" + b64(24, 4),
			want: [][]byte{bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 16), bytes.Repeat([]byte{4}, 24)},
		},
		{name: "empty", text: "", wantErr: "no key in it"},
		{name: "only comments", text: "# nothing\n\n", wantErr: "no key in it"},
		{name: "short key", text: b64(32, 1) + "\n" + b64(20, 5) + "\n", wantErr: "line 2: bad gossip keyring: a key is 20 bytes, want 32"},
		{name: "not base64", text: "not a key!\n", wantErr: "line 1: bad gossip keyring: not base64"},
		{name: "twice", text: b64(32, 1) + "\n" + b64(32, 2) + "\n" + b64(32, 1) + "\n", wantErr: "line 3: bad gossip keyring: the same key as line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keyring")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := pki.ReadKeyring(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, pki.ErrBadKeyring) {
					t.Fatalf("got error %v, want ErrBadKeyring containing %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d keys, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Errorf("key %d: got %x, want %x", i, got[i], tt.want[i])
				}
			}
		})
	}
	if _, err := pki.ReadKeyring(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want ErrNotExist", err)
	}
}

func TestWriteKeyringRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyring")
	a, b := pki.NewGossipKey(), pki.NewGossipKey()
	if len(a) != pki.GossipKeySize || bytes.Equal(a, b) {
		t.Fatalf("NewGossipKey: %d bytes, two equal: %v", len(a), bytes.Equal(a, b))
	}
	if err := pki.WriteKeyring(path, [][]byte{a}, false); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("got mode %v, want 0600", st.Mode().Perm())
	}
	if err := pki.WriteKeyring(path, [][]byte{b, a}, false); !errors.Is(err, pki.ErrExists) {
		t.Fatalf("write over an existing file: got %v, want ErrExists", err)
	}
	if got, err := pki.ReadKeyring(path); err != nil || len(got) != 1 || !bytes.Equal(got[0], a) {
		t.Fatalf("after refused overwrite: got %x, %v; want the first key alone", got, err)
	}
	if err := pki.WriteKeyring(path, [][]byte{b, a}, true); err != nil {
		t.Fatal(err)
	}
	got, err := pki.ReadKeyring(path)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], b) || !bytes.Equal(got[1], a) {
		t.Fatalf("after overwrite: got %x, %v; want b then a", got, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("after overwrite: mode %v, err %v; want 0600", st.Mode().Perm(), err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (err %v), want the keyring alone", entries, err)
	}
	if err := pki.WriteKeyring(path, [][]byte{a[:10]}, true); !errors.Is(err, pki.ErrBadKeyring) {
		t.Errorf("write a 10-byte key: got %v, want ErrBadKeyring", err)
	}
	if err := pki.WriteKeyring(path, nil, true); !errors.Is(err, pki.ErrBadKeyring) {
		t.Errorf("write no key: got %v, want ErrBadKeyring", err)
	}
	if id := pki.KeyID(a); len(id) != 8 || id == pki.KeyID(b) {
		t.Errorf("KeyID: got %q and %q, want 8 distinct hex digits", id, pki.KeyID(b))
	}
}

func TestGossipKeyProblem(t *testing.T) {
	tests := []struct {
		line, means, peer string
	}{
		{"[ERR] memberlist: failed to receive: No installed keys could decrypt the message from=10.0.0.7:51234", "not in this member's keyring", "10.0.0.7:51234"},
		{"[ERR] memberlist: failed to receive: encryption is configured but remote state is not encrypted from=127.0.0.1:4001", "in the clear", "127.0.0.1:4001"},
		{"failed to join 127.0.0.1:7946: remote state is encrypted and encryption is not configured", "has no gossip keyring", "127.0.0.1:7946"},
		{"[ERR] memberlist: Decrypt packet failed: unsupported encryption version 2 from=10.0.0.8:7946", "not encrypted with a gossip key", "10.0.0.8:7946"},
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:40000", "", "127.0.0.1:40000"},
	}
	for _, tt := range tests {
		means, ok := pki.GossipKeyProblem(tt.line)
		if ok != (tt.means != "") || !strings.Contains(means, tt.means) {
			t.Errorf("GossipKeyProblem(%q) = %q, %v; want %q", tt.line, means, ok, tt.means)
		}
		if got := pki.GossipPeer(tt.line); got != tt.peer {
			t.Errorf("GossipPeer(%q) = %q, want %q", tt.line, got, tt.peer)
		}
	}
}
