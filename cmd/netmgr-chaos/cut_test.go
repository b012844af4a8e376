package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCutPeers(t *testing.T) {
	topo := testTopology(t)
	ips := func(ns []node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.IP.String())
		}
		return out
	}
	got := cutArgs(topo.Stubs[1], "add", cutPeers(topo, faultCutStubs, topo.Stubs))
	want := append([]string{"exec", "nmchaos-stub2", "sh", cutScript, "add"}, ips(topo.Servers)...)
	if !slices.Equal(got, want) {
		t.Errorf("cut-stubs on stub2: got %q, want %q", got, want)
	}
	peers := cutPeers(topo, faultIsolateStub, topo.Stubs[2:3])
	if len(peers) != len(topo.Servers)+len(topo.Stubs)-1 || slices.ContainsFunc(peers, func(n node) bool { return n.Name == "stub3" }) {
		t.Errorf("isolate-stub stub3: got peers %v, want every container but stub3", ips(peers))
	}
}

// TestComposeLetsStubsCut checks the rendered Compose file gives every
// stub what cut.sh needs, and the servers nothing more.
func TestComposeLetsStubsCut(t *testing.T) {
	topo := testTopology(t)
	data, err := renderCompose(topo, "172.28.213.0/24", nil)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"- NET_ADMIN", "net.ipv4.conf.all.rp_filter: 1", "net.ipv4.conf.default.rp_filter: 1"} {
		if got := strings.Count(text, want); got != len(topo.Stubs) {
			t.Errorf("%q appears %d times, want once per stub (%d)", want, got, len(topo.Stubs))
		}
	}
	dockerfile, err := dockerFiles.ReadFile("docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), " cut.sh ") {
		t.Errorf("the Dockerfile does not copy cut.sh into the image")
	}
}

// TestCutScript runs docker/cut.sh in a network namespace of its own
// (unshare -rn, so no privilege is needed where user namespaces are
// allowed), with the ip command found on PATH (iproute2 here, busybox in
// the image; both print routes alike).
func TestCutScript(t *testing.T) {
	for _, tool := range []string{"unshare", "ip", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-rn", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace (unshare -rn): %v: %s", err, out)
	}
	script, err := dockerFiles.ReadFile("docker/cut.sh")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.sh")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		steps string // shell commands, $cut being the script
		want  string // the blackhole routes left, space-separated
	}{
		{"add", "$cut add 10.9.0.1 10.9.0.2", "10.9.0.1 10.9.0.2"},
		{"add twice", "$cut add 10.9.0.1 && $cut add 10.9.0.1", "10.9.0.1"},
		{"del one, and one never added", "$cut add 10.9.0.1 10.9.0.2 && $cut del 10.9.0.2 10.9.0.3", "10.9.0.1"},
		{"del keeps a longer address", "$cut add 10.9.0.1 10.9.0.10 && $cut del 10.9.0.1", "10.9.0.10"},
		{"clear", "$cut add 10.9.0.1 10.9.0.2 && $cut clear", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("unshare", "-rn", "sh", "-c",
				"ip link set lo up && cut='sh "+path+"' && "+tt.steps+" && ip route | sed -n 's/^blackhole \\([0-9.]*\\).*/\\1/p' | sort | tr '\\n' ' '")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v: %s", tt.steps, err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Errorf("got routes %q, want %q", got, tt.want)
			}
		})
	}
	out, err := exec.Command("sh", path, "cut").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "usage: cut.sh add|del IP") {
		t.Errorf("cut.sh cut: got %v, %q; want a failure with the usage", err, out)
	}
}
