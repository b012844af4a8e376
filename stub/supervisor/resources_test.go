package supervisor

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLimitCPUsWritesCgroupFiles: the values written are cpu.max's and
// cpuset.cpus' own syntax; a real cgroup needs the cpu controller, which
// the end-to-end test reports on when the kernel lacks it.
func TestLimitCPUsWritesCgroupFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"cpu.max", "cpuset.cpus"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&jobCgroup{dir: dir}).limitCPUs(2, "0,1"); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"cpu.max": "200000 100000", "cpuset.cpus": "0,1"} {
		if got, _ := os.ReadFile(filepath.Join(dir, f)); string(got) != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if err := (&jobCgroup{dir: filepath.Join(dir, "none")}).limitCPUs(1, ""); err == nil {
		t.Error("a cgroup without cpu.max took a CPU limit without an error")
	}
}

func TestDirKB(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 300*1024), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	kb, err := dirKB(dir)
	if err != nil {
		t.Fatal(err)
	}
	if kb < 300 || kb > 400 {
		t.Errorf("dirKB = %d, want about 300 (the link to / not followed)", kb)
	}
}
