package servertest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// browserNames are the headless Chromium builds FindBrowser looks for, in
// order: Debian's chromium-headless-shell (`make tools` installs it),
// then full Chromium or Chrome.
var browserNames = []string{"chromium-headless-shell", "chromium", "chromium-browser", "headless_shell", "google-chrome"}

// FindBrowser returns the path of a headless Chromium to drive the
// dashboard with: what NETMGR_TEST_BROWSER names, else the first of
// browserNames on PATH. Without one it returns an error saying what it
// looked for and how to install one.
func FindBrowser() (string, error) {
	names := browserNames
	if b := os.Getenv("NETMGR_TEST_BROWSER"); b != "" {
		names = []string{b}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no headless browser found (looked for %s); `make tools` installs Debian's chromium-headless-shell",
		strings.Join(names, ", "))
}
