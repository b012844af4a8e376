package main

import (
	"bytes"
	"testing"
)

// TestLinkHelpAsTemplate holds the help printHelp writes for each link
// (netexec --help, ...) equal to the text of urfave/cli's template.
func TestLinkHelpAsTemplate(t *testing.T) {
	for _, name := range linkNames() {
		t.Run(name, func(t *testing.T) {
			code, got, errOut := runCLI(t, name, "--help")
			if code != exitOK {
				t.Fatalf("%s --help: exit %d, stderr %q", name, code, errOut)
			}
			// The same app, its help through the template.
			app, _ := newApp(name, nil)
			app.Setup()
			if !plainLinkApp(app) {
				t.Fatalf("%s's app is not one writeLinkHelp writes", name)
			}
			var want bytes.Buffer
			urfaveHelpPrinter(&want, linkHelpTemplate, app)
			if got != want.String() {
				t.Errorf("%s --help differs from urfave/cli's template:\n--- got\n%s\n--- want\n%s", name, got, want.String())
			}
		})
	}
}
