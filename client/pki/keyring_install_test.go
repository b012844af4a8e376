package pki_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/netmgr/netmgr/client/pki"
)

func TestInstallKeys(t *testing.T) {
	a, b, c := pki.NewGossipKey(), pki.NewGossipKey(), pki.NewGossipKey()
	id := pki.KeyID
	tests := []struct {
		name        string
		ring, file  [][]byte
		added       []string
		removed     []string
		primaryMove bool
	}{
		{name: "unchanged", ring: [][]byte{a, b}, file: [][]byte{a, b}},
		{name: "order of the others does not matter", ring: [][]byte{a, b, c}, file: [][]byte{a, c, b}},
		{name: "add", ring: [][]byte{a}, file: [][]byte{a, b}, added: []string{id(b)}},
		{name: "use", ring: [][]byte{a, b}, file: [][]byte{b, a}, primaryMove: true},
		{name: "remove", ring: [][]byte{b, a}, file: [][]byte{b}, removed: []string{id(a)}},
		{name: "replace at once", ring: [][]byte{a}, file: [][]byte{c}, added: []string{id(c)}, removed: []string{id(a)}, primaryMove: true},
		{name: "remove from the middle", ring: [][]byte{a, b, c}, file: [][]byte{a, c}, removed: []string{id(b)}},
		{name: "remove one, add another", ring: [][]byte{b, a}, file: [][]byte{b, c}, added: []string{id(c)}, removed: []string{id(a)}},
		{name: "remove all but a new primary", ring: [][]byte{a, b}, file: [][]byte{c, b}, added: []string{id(c)}, removed: []string{id(a)}, primaryMove: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring, err := memberlist.NewKeyring(tt.ring, tt.ring[0])
			if err != nil {
				t.Fatal(err)
			}
			// What a reader decrypting a packet holds (GetKeys's slice)
			// must not change under it: memberlist reads it unlocked.
			held := ring.GetKeys()
			before := slices.Clone(held)
			ch, err := pki.InstallKeys(ring, tt.file)
			if err != nil {
				t.Fatalf("InstallKeys: %v", err)
			}
			for i := range held {
				if &held[i][0] != &before[i][0] {
					t.Errorf("InstallKeys rewrote key %d of a slice a reader held", i)
				}
			}
			if !slices.Equal(ch.Added, tt.added) || !slices.Equal(ch.Removed, tt.removed) || ch.PrimaryChanged != tt.primaryMove {
				t.Errorf("got change %+v, want added %v removed %v primary moved %v", ch, tt.added, tt.removed, tt.primaryMove)
			}
			if ch.Primary != id(tt.file[0]) {
				t.Errorf("got primary %s, want %s", ch.Primary, id(tt.file[0]))
			}
			if ch.Changed() != (len(tt.added)+len(tt.removed) > 0 || tt.primaryMove) {
				t.Errorf("Changed() = %v for %+v", ch.Changed(), ch)
			}
			got := ring.GetKeys()
			if !bytes.Equal(ring.GetPrimaryKey(), tt.file[0]) {
				t.Errorf("ring encrypts with %s, want %s", id(ring.GetPrimaryKey()), id(tt.file[0]))
			}
			if len(got) != len(tt.file) {
				t.Fatalf("ring holds %d keys, want %d", len(got), len(tt.file))
			}
			for _, k := range tt.file {
				if !slices.ContainsFunc(got, func(x []byte) bool { return bytes.Equal(x, k) }) {
					t.Errorf("ring lacks key %s", id(k))
				}
			}
		})
	}
	t.Run("no keys", func(t *testing.T) {
		ring, _ := memberlist.NewKeyring(nil, a)
		if _, err := pki.InstallKeys(ring, nil); err == nil {
			t.Fatal("installed an empty keyring")
		}
		if !bytes.Equal(ring.GetPrimaryKey(), a) || len(ring.GetKeys()) != 1 {
			t.Fatal("a refused install changed the ring")
		}
	})
}
