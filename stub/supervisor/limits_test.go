package supervisor

import (
	"os"
	"testing"
	"time"

	"github.com/netmgr/netmgr/internal/procinfo"
)

func TestLimitReasons(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{name: "run", got: runLimitReason(200 * time.Second), want: "timeout: run limit of 3m20s exceeded"},
		{name: "run in hours", got: runLimitReason(2 * time.Hour), want: "timeout: run limit of 2h0m0s exceeded"},
		{name: "memory", got: memLimitReason(20*1024, 23*1024), want: "memory: memory limit of 20 MB exceeded (resident 23 MB)"},
		{name: "memory rounded up", got: memLimitReason(20*1024, 20*1024+1), want: "memory: memory limit of 20 MB exceeded (resident 21 MB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestGroupRSS(t *testing.T) {
	fs, err := procinfo.NewDefaultFS()
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	st, err := fs.Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	rss, err := groupRSS(fs, st.PGRP)
	if err != nil {
		t.Fatalf("groupRSS: %v", err)
	}
	if own := int64(st.ResidentMemory()) / 1024; rss < own/2 {
		t.Errorf("group RSS = %d KB, want at least about the test's own %d KB", rss, own)
	}
}
