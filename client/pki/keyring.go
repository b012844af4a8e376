package pki

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GossipKeySize is the size of a key NewGossipKey makes: 32 bytes, for
// AES-256. A keyring also accepts the 16- and 24-byte keys memberlist
// takes (AES-128, AES-192).
const GossipKeySize = 32

// ErrBadKeyring means a keyring file cannot be used: a line is not a
// base64 key of 16, 24 or 32 bytes, a key is there twice, or there is no
// key at all.
var ErrBadKeyring = errors.New("bad gossip keyring")

// keyringHeader starts every keyring file WriteKeyring writes.
const keyringHeader = "# netmgr gossip keyring: one base64 key per line. The first key encrypts\n" +
	"# what this node sends; every key decrypts what it receives. Rotate with\n" +
	"# netmgr tls gossip-key add, use and remove (see its --help).\n"

// NewGossipKey returns a new random gossip key of GossipKeySize bytes.
func NewGossipKey() []byte {
	key := make([]byte, GossipKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24)
	return key
}

// KeyID names a gossip key in logs and listings without giving it away:
// the first 8 hex digits of its SHA-256.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// checkGossipKey returns an error unless key has a size memberlist takes.
func checkGossipKey(key []byte) error {
	switch len(key) {
	case 16, 24, 32:
		return nil
	}
	return fmt.Errorf("%w: a key is %d bytes, want 32 (or 16 or 24); netmgr tls gossip-key create makes one", ErrBadKeyring, len(key))
}

// ReadKeyring reads a keyring file: one base64 key per line, the first the
// primary (the one that encrypts), with blank lines and lines starting
// with '#' ignored. It returns the keys in file order.
func ReadKeyring(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gossip keyring: %w", err)
	}
	keys, err := parseKeyring(data)
	if err != nil {
		return nil, fmt.Errorf("read gossip keyring %s: %w", path, err)
	}
	return keys, nil
}

// parseKeyring parses the text of a keyring file.
func parseKeyring(data []byte) ([][]byte, error) {
	var (
		keys  [][]byte
		lines []int // the line of each key
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w: not base64: %v", n, ErrBadKeyring, err)
		}
		if err := checkGossipKey(key); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		for i, k := range keys {
			if bytes.Equal(k, key) {
				return nil, fmt.Errorf("line %d: %w: the same key as line %d", n, ErrBadKeyring, lines[i])
			}
		}
		keys = append(keys, key)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKeyring, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key in it", ErrBadKeyring)
	}
	return keys, nil
}

// WriteKeyring writes keys to path as ReadKeyring reads them, the first
// the primary, with mode 0600. It refuses to replace an existing file
// unless overwrite is set; a replaced file is swapped in whole (written
// beside it and renamed), so a process reloading it never reads half.
func WriteKeyring(path string, keys [][]byte, overwrite bool) error {
	if len(keys) == 0 {
		return fmt.Errorf("write gossip keyring %s: %w: no key", path, ErrBadKeyring)
	}
	var b strings.Builder
	b.WriteString(keyringHeader)
	for i, k := range keys {
		if err := checkGossipKey(k); err != nil {
			return fmt.Errorf("write gossip keyring %s: key %d: %w", path, i+1, err)
		}
		b.WriteString(base64.StdEncoding.EncodeToString(k))
		b.WriteByte('\n')
	}
	if _, err := os.Lstat(path); err == nil && !overwrite {
		return fmt.Errorf("write gossip keyring %s: %w", path, ErrExists)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up on error
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write gossip keyring %s: %w", path, err)
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("write gossip keyring %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write gossip keyring %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write gossip keyring %s: %w", path, err)
	}
	if !overwrite {
		// Link fails if path appeared meanwhile, where a rename would
		// replace it.
		if err := os.Link(tmp.Name(), path); err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("write gossip keyring %s: %w", path, ErrExists)
			}
			return fmt.Errorf("write gossip keyring: %w", err)
		}
		return nil
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	return nil
}
