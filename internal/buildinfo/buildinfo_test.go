package buildinfo_test

import (
	"strings"
	"testing"

	"github.com/netmgr/netmgr/internal/buildinfo"
)

func TestGet(t *testing.T) {
	tests := []struct {
		name, version, commit string
		want                  func(buildinfo.Info) bool
	}{
		{"linked version and commit win", "v1.2.3-4-gabcdef0", "abcdef0123", func(i buildinfo.Info) bool {
			return i.Version == "v1.2.3-4-gabcdef0" && i.Commit == "abcdef0123" && !i.Modified
		}},
		{"dirty linked version", "v1.2.3-dirty", "", func(i buildinfo.Info) bool { return i.Version == "v1.2.3-dirty" && i.Modified }},
		{"nothing linked", "", "", func(i buildinfo.Info) bool { return i.Version != "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildinfo.Get(tt.version, tt.commit)
			if !tt.want(got) {
				t.Errorf("Get(%q, %q) = %+v", tt.version, tt.commit, got)
			}
			if !strings.HasPrefix(got.Go, "go") {
				t.Errorf("Get(%q, %q).Go = %q, want the toolchain", tt.version, tt.commit, got.Go)
			}
		})
	}
}

func TestShort(t *testing.T) {
	tests := []struct {
		name string
		in   buildinfo.Info
		want string
	}{
		{"tagged", buildinfo.Info{Version: "v1.0.0", Commit: "f478d93abcdef"}, "v1.0.0"},
		{"devel with commit", buildinfo.Info{Version: buildinfo.Devel, Commit: "f478d93abcdef"}, "devel+f478d93"},
		{"devel without commit", buildinfo.Info{Version: buildinfo.Devel}, "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Short(); got != tt.want {
				t.Errorf("Short() = %q, want %q", got, tt.want)
			}
		})
	}
}
