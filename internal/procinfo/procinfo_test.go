package procinfo_test

import (
	"os"
	"slices"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/netmgr/netmgr/internal/procinfo"
)

// TestAsProcfs reads this machine's /proc with this package and with
// prometheus/procfs, which it replaced, and compares what both say.
func TestAsProcfs(t *testing.T) {
	ours, err := procinfo.NewDefaultFS()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	theirs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}

	st, err := ours.Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p, err := theirs.Proc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	pst, err := p.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != pst.PID || st.PGRP != pst.PGRP || st.State != pst.State || abs(st.ResidentMemory()-pst.ResidentMemory()) > 4<<20 {
		t.Errorf("stat = %+v (RSS %d B), procfs says pid %d pgrp %d state %s RSS %d B",
			st, st.ResidentMemory(), pst.PID, pst.PGRP, pst.State, pst.ResidentMemory())
	}

	pids, err := ours.AllPIDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) || !slices.Contains(pids, 1) {
		t.Errorf("AllPIDs lacks this process or init: %d pids", len(pids))
	}

	kb, err := ours.MemTotalKB()
	if err != nil {
		t.Fatal(err)
	}
	mi, err := theirs.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	if mi.MemTotal == nil || kb != *mi.MemTotal {
		t.Errorf("MemTotal = %d KiB, procfs says %v", kb, mi.MemTotal)
	}

	ms, err := ours.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	pms, err := theirs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	var want []procinfo.Mount
	for _, m := range pms {
		want = append(want, procinfo.Mount{MountPoint: m.MountPoint, FSType: m.FSType})
	}
	if !slices.Equal(ms, want) {
		t.Errorf("mounts = %v, procfs says %v", ms, want)
	}

	if _, err := ours.Load1(); err != nil {
		t.Error(err)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestStatOfOddCommand parses a stat line whose command name holds spaces
// and parentheses.
func TestStatOfOddCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/self", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir+"/42", 0o755); err != nil {
		t.Fatal(err)
	}
	line := "42 (a (b) c) S 1 40 40 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 1000 12345678 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	if err := os.WriteFile(dir+"/42/stat", []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := procinfo.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat(42)
	if err != nil {
		t.Fatal(err)
	}
	if want := (procinfo.ProcStat{PID: 42, State: "S", PGRP: 40, RSS: 321}); st != want {
		t.Errorf("stat = %+v, want %+v", st, want)
	}
}
