package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name -> content under dir, scripts executable.
func writeFiles(t *testing.T, dir string, fs map[string]string) {
	t.Helper()
	for name, content := range fs {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// readFile returns the content of dir/name, or "<missing>".
func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "<missing>"
	}
	return string(data)
}

// TestFilesInAndOut is doc/files.md's session: a local script and its input
// file, which exist only in the submitting directory, sent with
// --copy-binary and --copy-in, run in the exec dir of a stub that has
// neither, and their outputs (a file and a glob of a subdirectory) brought
// back by --wait done into the current directory; netmgr fetch then
// writes them again elsewhere, one subdirectory per instance for a job of
// two, and says what was not kept and why.
func TestFilesInAndOut(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub")
	}
	t.Setenv("TMPDIR", t.TempDir())
	startDevAgent(t, t.TempDir())
	work := t.TempDir()
	t.Chdir(work)
	writeFiles(t, work, map[string]string{
		"count.sh":      "#!/bin/sh\nwc -l < \"$1\" > lines.txt\nmkdir -p plots\necho plot$NETMGR_INSTANCE > plots/p$NETMGR_INSTANCE.png\n",
		"data/in.txt":   "a\nb\nc\n",
		"data/more.txt": "unused\n",
	})
	code, out, errOut := runCLI(t, "netexec", "--copy-binary", "--copy-in", "data/in.txt", "--copy-out", "lines.txt,plots/*.png",
		"--wait", "done", "./count.sh", "./data/in.txt")
	if code != exitOK {
		t.Fatalf("netexec: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if got := readFile(t, work, "lines.txt"); strings.TrimSpace(got) != "3" {
		t.Errorf("lines.txt fetched by --wait done = %q, want 3; stdout:\n%s", got, out)
	}
	if got := readFile(t, work, "plots/p0.png"); got != "plot0\n" {
		t.Errorf("plots/p0.png = %q", got)
	}
	if !strings.Contains(out, "instance 0: fetched lines.txt plots/p0.png into .") {
		t.Errorf("netexec --wait done does not say what it fetched:\n%s", out)
	}
	id := strings.Fields(out[strings.Index(out, " id ")+4:])[0]

	elsewhere := t.TempDir()
	if code, out, errOut := runCLI(t, "netmgr", "fetch", id, elsewhere); code != exitOK || readFile(t, elsewhere, "lines.txt") != readFile(t, work, "lines.txt") {
		t.Errorf("netmgr fetch %s %s: exit %d, lines.txt %q\nstdout:\n%s\nstderr:\n%s", id, elsewhere, code, readFile(t, elsewhere, "lines.txt"), out, errOut)
	}

	code, out, errOut = runCLI(t, "netexec", "-n", "2", "--copy-binary", "--copy-in", "data/in.txt", "--copy-out", "lines.txt,plots,nothing.*",
		"--wait", "done", "./count.sh", "./data/in.txt")
	if code != exitError || !strings.Contains(out, "instance 1: exited 0") || !strings.Contains(errOut, "nothing.*: matched nothing") {
		t.Errorf("netexec --wait done of a job whose copy_out matched nothing: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the instances exited 0, exit 1 saying what was not kept", code, out, errOut)
	}
	two := strings.Fields(out[strings.Index(out, " id ")+4:])[0]
	perInstance := t.TempDir()
	code, out, errOut = runCLI(t, "netmgr", "fetch", two, perInstance)
	if code != exitError || !strings.Contains(errOut, "instance 1: nothing.*: matched nothing") || !strings.Contains(errOut, "some outputs were not kept") {
		t.Errorf("netmgr fetch of a job with a copy_out that matched nothing: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 saying what was not kept and why", code, out, errOut)
	}
	for _, in := range []string{"0", "1"} {
		if got := readFile(t, perInstance, in+"/plots/p"+in+".png"); got != "plot"+in+"\n" {
			t.Errorf("instance %s's plot in its subdirectory = %q", in, got)
		}
	}
	if code, _, _ := runCLI(t, "netmgr", "fetch", "--instance", "1", two, t.TempDir()); code != exitError {
		t.Errorf("fetch --instance 1 with a lost file: exit %d, want 1", code)
	}
}

// TestCopyInLimit: files over the servers' --max-copy-size are refused at
// submit with an error that gives the limit and the option that sets it,
// and no job is made.
func TestCopyInLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: starts a server and a stub")
	}
	t.Setenv("TMPDIR", t.TempDir())
	startDevAgent(t, t.TempDir(), "--max-copy-size", "1")
	work := t.TempDir()
	t.Chdir(work)
	if err := os.WriteFile(filepath.Join(work, "big.bin"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "netexec", "--copy-in", "big.bin", "/bin/true")
	if code == exitOK || !strings.Contains(errOut, "over the size limit") || !strings.Contains(errOut, "1 MiB") || !strings.Contains(errOut, "--max-copy-size") {
		t.Errorf("netexec with 2 MiB of copy_in over a 1 MiB limit: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "netstatus", "-j"); code != exitOK || strings.Contains(out, "true") {
		t.Errorf("a job was made all the same:\n%s", out)
	}
}
