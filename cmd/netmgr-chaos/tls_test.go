package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client/pki"
)

// TestComposeSecurity checks that every server and stub starts with its
// own certificate from the mounted directory, which holds those files
// and not the CA's key, and that -insecure gives --insecure instead.
func TestComposeSecurity(t *testing.T) {
	topo := testTopology(t)
	nodes := len(topo.Servers) + len(topo.Stubs)

	t.Run("insecure", func(t *testing.T) {
		data, err := renderCompose(topo, "172.28.213.0/24", nil)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if got := strings.Count(text, "- --insecure\n"); got != nodes {
			t.Errorf("--insecure appears %d times, want once per server and stub (%d)", got, nodes)
		}
		if strings.Contains(text, "--ca-file") || strings.Contains(text, "--gossip-keyring") || strings.Contains(text, tlsMountDir+":ro") {
			t.Errorf("the insecure Compose file names TLS material:\n%s", text)
		}
	})

	t.Run("tls", func(t *testing.T) {
		sec, err := makeSecurity(t.TempDir(), topo)
		if err != nil {
			t.Fatal(err)
		}
		data, err := renderCompose(topo, "172.28.213.0/24", sec)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if strings.Contains(text, "--insecure") {
			t.Errorf("the TLS Compose file has --insecure")
		}
		if got, want := strings.Count(text, "- "+sec.dir+":"+tlsMountDir+":ro\n"), nodes; got != want {
			t.Errorf("the TLS directory is mounted read-only %d times, want %d", got, want)
		}
		for _, flag := range []string{"--ca-file=" + tlsMountDir + "/" + pki.CAFile, "--gossip-keyring=" + tlsMountDir + "/" + keyringFile} {
			if got := strings.Count(text, "- "+flag+"\n"); got != nodes {
				t.Errorf("%s appears %d times, want %d", flag, got, nodes)
			}
		}
		if keys, err := pki.ReadKeyring(filepath.Join(sec.dir, keyringFile)); err != nil || len(keys) != 1 {
			t.Errorf("gossip keyring: %d keys, %v; want one key", len(keys), err)
		}
		for _, n := range topo.Servers {
			for _, want := range []string{"--cert-file=/tls/server-" + n.Name + ".pem", "--key-file=/tls/server-" + n.Name + "-key.pem"} {
				if !strings.Contains(text, "- "+want+"\n") {
					t.Errorf("server %s: no %s", n.Name, want)
				}
			}
		}
		for _, n := range topo.Stubs {
			for _, want := range []string{"--cert-file=/tls/stub-" + n.Name + ".pem", "--key-file=/tls/stub-" + n.Name + "-key.pem"} {
				if !strings.Contains(text, "- "+want+"\n") {
					t.Errorf("stub %s: no %s", n.Name, want)
				}
			}
		}
		// Every file a flag names is in the mounted directory.
		for _, line := range strings.Split(text, "\n") {
			_, path, ok := strings.Cut(line, "="+tlsMountDir+"/")
			if !ok {
				continue
			}
			if _, err := os.Stat(filepath.Join(sec.dir, path)); err != nil {
				t.Errorf("%s: %v", strings.TrimSpace(line), err)
			}
		}
		if _, err := os.Stat(filepath.Join(sec.dir, pki.CAKeyFile)); !os.IsNotExist(err) {
			t.Errorf("the CA key is left in the mounted directory (stat: %v)", err)
		}
		if got, want := sec.checker.Self(), (pki.Identity{Role: pki.RoleClient, Name: chaosUser}); got != want {
			t.Errorf("checker identity: got %s, want %s", got, want)
		}
	})
}

// TestImageHasChaosUser checks that the user the jobs run as exists in
// the image and that the ledger is writable by it.
func TestImageHasChaosUser(t *testing.T) {
	passwd, err := dockerFiles.ReadFile("docker/passwd")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "\n"+chaosUser+":x:1000:1000:") {
		t.Errorf("docker/passwd has no user %s with uid 1000:\n%s", chaosUser, passwd)
	}
	dockerfile, err := dockerFiles.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), `"chmod", "1777", "/tmp", "/ledger"`) {
		t.Errorf("the Dockerfile does not make /ledger writable by every user")
	}
}
