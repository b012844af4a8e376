package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// debVersion is the version the package test builds the package as.
const debVersion = "0.0~pkgtest"

// debContents are the paths the package must hold: the binary and its
// links (the link's target, or "" for a file), the units, the sample
// configurations and the man pages.
var debContents = map[string]string{
	"usr/bin/netmgr":    "",
	"usr/bin/netexec":   "netmgr",
	"usr/bin/netkill":   "netmgr",
	"usr/bin/netstatus": "netmgr",
	"usr/bin/reserve":   "netmgr",
	"usr/bin/unreserve": "netmgr",

	"usr/lib/systemd/system/netmgr-server.service": "",
	"usr/lib/systemd/system/netmgr-stub.service":   "",
	"etc/netmgr/server.toml":                       "",
	"etc/netmgr/stub.toml":                         "",

	"usr/share/man/man1/netmgr.1.gz":    "",
	"usr/share/man/man1/netexec.1.gz":   "",
	"usr/share/man/man1/netkill.1.gz":   "",
	"usr/share/man/man1/netstatus.1.gz": "",
	"usr/share/man/man1/reserve.1.gz":   "",
	"usr/share/man/man1/unreserve.1.gz": "",
}

// TestDebPackageInContainer builds the Debian package with make deb,
// unpacks it with dpkg-deb into the root of an image built FROM scratch
// (there is no registry to pull a Debian image from, and the binary is
// static), and runs a one-server, one-stub cluster in two containers on
// the host's network from the ExecStart lines of the package's units and
// a site's server.toml and stub.toml. A job submitted to it must run,
// and netexec, reached through the package's link, must submit one through
// the stub's socket at the unit's default path.
//
// It needs make, git, dpkg-deb and a Docker engine; without them it says
// which is missing and skips.
func TestDebPackageInContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping package test under -short: it builds a Debian package and runs containers")
	}
	for _, tool := range []string{"make", "git", "dpkg-deb", "docker"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipping package test: %s is not installed (%v)", tool, err)
		}
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Skipf("skipping package test: no Docker engine answers (%v: %s)", err, bytes.TrimSpace(out))
	}
	dir := t.TempDir()
	deb := buildDeb(t)

	rootfs := filepath.Join(dir, "image", "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("dpkg-deb", "-x", deb, rootfs).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v\n%s", deb, err, out)
	}
	checkDebContents(t, rootfs)
	checkDebScripts(t, deb, filepath.Join(dir, "control"))
	serverCmd := unitExecStart(t, filepath.Join(rootfs, "usr/lib/systemd/system/netmgr-server.service"))
	stubCmd := unitExecStart(t, filepath.Join(rootfs, "usr/lib/systemd/system/netmgr-stub.service"))
	if !unitHas(t, filepath.Join(rootfs, "usr/lib/systemd/system/netmgr-stub.service"), "KillMode=process") {
		t.Error("the stub's unit has no KillMode=process: stopping the stub would kill its jobs")
	}

	// The site's part: the configuration files in place of the samples,
	// and what a Debian system has that a FROM scratch image lacks (root's
	// passwd entry, /tmp, the directories systemd makes for the units).
	c := writeFileCluster(t, filepath.Join(rootfs, "etc", "netmgr"),
		fileClusterPaths{etc: "/etc/netmgr", state: "/var/lib/netmgr"})
	for _, d := range []string{"tmp", "root", "run/netmgr", "var/lib/netmgr"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(rootfs, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/usr/bin/netmgr\n",
		"etc/group":  "root:x:0:\n",
	} {
		if err := os.WriteFile(filepath.Join(rootfs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	image := fmt.Sprintf("netmgr-debtest:%d", os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "image", "Dockerfile"), []byte("FROM scratch\nCOPY rootfs/ /\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docker(t, 5*time.Minute, "build", "-q", "-t", image, filepath.Join(dir, "image"))
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })

	runContainer(t, image, "server", serverCmd)
	stub := runContainer(t, image, "stub", stubCmd)

	job := c.runJob(t, "root", 2*time.Minute, "/usr/bin/netmgr", "version")
	t.Logf("job %d ran on the packaged stub: %s", job.ID, job.State)

	// A user on the stub's machine: netexec through the package's link,
	// reaching the servers through the stub's socket at the unit's path;
	// it exits 0 only if the job did.
	out := docker(t, 2*time.Minute, "exec", stub, "/usr/bin/netexec", "--wait", "done", "/usr/bin/netmgr", "version")
	if !strings.Contains(out, "exited 0") {
		t.Errorf("netexec --wait done in the stub's container printed %q, want the instance's exit 0", out)
	}
}

// buildDeb runs make deb in the repository and returns the package's path.
func buildDeb(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-C", root, "deb", "DEB_VERSION="+debVersion, "DEB_ARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	deb := filepath.Join(root, "build", fmt.Sprintf("netmgr_%s_%s.deb", debVersion, runtime.GOARCH))
	if _, err := os.Stat(deb); err != nil {
		t.Fatalf("make deb made no package: %v", err)
	}
	return deb
}

// checkDebContents checks the unpacked package under rootfs against
// debContents.
func checkDebContents(t *testing.T, rootfs string) {
	t.Helper()
	for path, target := range debContents {
		p := filepath.Join(rootfs, path)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("the package lacks /%s: %v", path, err)
			continue
		}
		if target == "" {
			if !fi.Mode().IsRegular() {
				t.Errorf("/%s is %v, want a file", path, fi.Mode())
			}
			continue
		}
		if got, err := os.Readlink(p); err != nil || got != target {
			t.Errorf("/%s links to %q (%v), want %q", path, got, err, target)
		}
	}
	// The man pages are this tree's (make man ran): netmgr.1 documents
	// the configuration file.
	f, err := os.Open(filepath.Join(rootfs, "usr/share/man/man1/netmgr.1.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("netmgr.1.gz: %v", err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("netmgr.1.gz: %v", err)
	}
	if !bytes.Contains(page, []byte(".TH netmgr 1")) {
		t.Errorf("netmgr.1.gz is no man page: %.80q", page)
	}
	if !bytes.Contains(page, []byte("--config")) {
		t.Error("the packaged netmgr.1 does not document --config: an old page?")
	}
}

// checkDebScripts unpacks the package's control files into dir and checks
// its maintainer scripts are there and parse as sh scripts (the image has
// no shell to run them).
func checkDebScripts(t *testing.T, deb, dir string) {
	t.Helper()
	if out, err := exec.Command("dpkg-deb", "-e", deb, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e %s: %v\n%s", deb, err, out)
	}
	for _, name := range []string{"postinst", "prerm", "postrm"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("maintainer script %s: %v (mode %v), want an executable file", name, err, fi)
			continue
		}
		if out, err := exec.Command("sh", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", name, err, out)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "conffiles")); err != nil ||
		!strings.Contains(string(data), "/etc/netmgr/server.toml") || !strings.Contains(string(data), "/etc/netmgr/stub.toml") {
		t.Errorf("conffiles %q (%v), want both sample configurations", data, err)
	}
}

// unitExecStart returns the command line of the unit file's ExecStart.
func unitExecStart(t *testing.T, unit string) []string {
	t.Helper()
	f, err := os.Open(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "ExecStart="); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("%s has no ExecStart line", unit)
	return nil
}

// unitHas reports whether the unit file has the line.
func unitHas(t *testing.T, unit, line string) bool {
	t.Helper()
	data, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// runContainer starts argv in a container of image on the host's network
// and returns its name; it is removed at cleanup, its log printed first if
// the test failed.
func runContainer(t *testing.T, image, role string, argv []string) string {
	t.Helper()
	name := fmt.Sprintf("netmgr-debtest-%s-%d", role, os.Getpid())
	_ = exec.Command("docker", "rm", "-f", name).Run()
	docker(t, time.Minute, append([]string{"run", "-d", "--name", name, "--network", "host", image}, argv...)...)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", name).CombinedOutput()
			t.Logf("container %s (%s):\n%s", name, strings.Join(argv, " "), out)
		}
		_ = exec.Command("docker", "rm", "-f", name).Run()
	})
	return name
}

// docker runs the docker command with args, failing the test if it fails
// or takes longer than timeout, and returns its output.
func docker(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
