package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestE2EGangReadmeExample runs the README's Parallel jobs script, taken
// from the README itself, with netexec --gang on one server and three
// stub processes: each instance prints its rank, the gang's size, its
// machine and rank 0's machine, read from the host file.
func TestE2EGangReadmeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 4 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "cat > ring.sh <<'EOF'\n")
	script, _, ok2 := strings.Cut(rest, "\nEOF\n")
	if !ok || !ok2 {
		t.Fatal("README has no ring.sh example in its Parallel jobs section")
	}
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netmgr")
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "ring.sh"), []byte(script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, cl := procCluster(t, dir, 1, 3)
	r := &e2eRunner{links: links, env: c.Env(), dir: work}

	r.run(t, "netexec", "--name", "ring", "--gang", "-n", "3", "--unique", "--wait", "done", "./ring.sh").wantCode(t, 0)
	job, err := cl.Job(t.Context(), "ring")
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	hosts := make([]string, len(job.Instances))
	for _, in := range job.Instances {
		hosts[in.Index] = in.Machine
	}
	for _, in := range job.Instances {
		res := r.run(t, "netmgr", "logs", "--instance", strconv.Itoa(in.Index), "ring")
		res.wantCode(t, 0)
		want := "rank " + strconv.Itoa(in.Index) + " of 3 on " + in.Machine + "; rank 0 on " + hosts[0] + "\n"
		if res.stdout != want {
			t.Errorf("instance %d printed %q, want %q", in.Index, res.stdout, want)
		}
	}
}
