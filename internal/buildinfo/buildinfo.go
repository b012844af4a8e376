package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Devel is the version of a build that has no version: a go build outside
// the Makefile (and the builds that link the version as it does:
// scripts/ldflags.sh, servertest.BuildBinary) of a tree whose module
// version Go could not tell (a git worktree, GOFLAGS=-buildvcs=false).
const Devel = "devel"

// Info describes one build.
type Info struct {
	// Version is the linked-in version (git describe --always --dirty),
	// else the module version Go stamped, else Devel.
	Version string
	// Commit is the VCS revision, or "" when the build did not record it.
	Commit string
	// Modified is true when the work tree had uncommitted changes.
	Modified bool
	// Go is the toolchain and platform, e.g. "go1.26.8 linux/amd64".
	Go string
}

// Get returns the running build's Info. version and commit are the ones
// set at link time, empty when none was; the build information Go
// recorded fills in what they leave empty. A linked version ending in
// "-dirty" (git describe --dirty) marks the build Modified.
func Get(version, commit string) Info {
	info := Info{Version: version, Commit: commit, Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	info.Modified = strings.HasSuffix(version, "-dirty")
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				info.Modified = true
			}
		}
	}
	if info.Version == "" {
		info.Version = Devel
	}
	return info
}

// Short returns the version as one word for listings: the version, and for
// a Devel build the short commit when known ("devel+f478d93").
func (i Info) Short() string {
	if i.Version == Devel && i.Commit != "" {
		c := i.Commit
		if len(c) > 7 {
			c = c[:7]
		}
		return Devel + "+" + c
	}
	return i.Version
}
