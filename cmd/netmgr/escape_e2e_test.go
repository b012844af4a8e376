package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/netmgr/netmgr/client"
)

// TestE2EHostileTextPrintedEscaped submits, to a server and a stub
// process, jobs whose name, binary path and arguments hold ESC sequences,
// CR and newlines, then runs netstatus (jobs, one job, machines), netmgr
// history, netmgr events and commands that fail naming them: no output
// holds a byte a terminal acts on (a control byte but '\n' line ends,
// DEL, ESC), and the escaped form is what appears instead (issue 34,
// point 3). The --json outputs stay JSON that decodes to the raw values.
func TestE2EHostileTextPrintedEscaped(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test under -short: it builds netmgr and runs 2 processes")
	}
	t.Parallel() // its own process cluster, ports and directories; it sets no environment
	const (
		bad        = "\x1b[31m\r\n"
		badEscaped = `\x1b[31m\r\n`
	)
	dir := t.TempDir()
	bin := netmgrBinary(t)
	links := commandLinks(t, dir, bin, "netexec", "netstatus", "netkill", "netmgr")
	c, _ := procCluster(t, dir, 1, 1)
	r := &e2eRunner{links: links, env: c.Env()}

	var outputs []e2eResult
	check := func(res e2eResult, wantEscaped bool) {
		t.Helper()
		outputs = append(outputs, res)
		for _, out := range []struct{ name, text string }{{"stdout", res.stdout}, {"stderr", res.stderr}} {
			if i := strings.IndexFunc(out.text, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
				t.Errorf("%s of %q holds byte %#x at %d:\n%s", out.name, res.args, out.text[i], i, res)
			}
			if !utf8.ValidString(out.text) || strings.Contains(out.text, "\u009b") {
				t.Errorf("%s of %q holds invalid UTF-8 or a CSI:\n%s", out.name, res.args, res)
			}
		}
		if wantEscaped && !strings.Contains(res.stdout+res.stderr, badEscaped) {
			t.Errorf("the output of %q lacks the escaped text %s:\n%s", res.args, badEscaped, res)
		}
	}

	// A name with control bytes is refused (by netexec, before the
	// servers would); the refusal names it escaped.
	res := r.run(t, "netexec", "--name", "n"+bad, "/bin/true")
	res.wantCode(t, exitUsage)
	check(res, true)

	// A binary reached through a link whose name holds them, run with
	// arguments that hold them; it exits 3.
	link := filepath.Join(dir, "sh"+bad)
	if err := os.Symlink("/bin/sh", link); err != nil {
		t.Fatal(err)
	}
	res = r.run(t, "netexec", "--name", "hostile", "--wait", "done", link, "-c", "exit 3", "a"+bad, "b c"+bad)
	res.wantCode(t, exitError)
	check(res, false)
	id := submittedID(t, res)
	// A binary that is not there, under a path that holds them: its
	// attempt fails to start, with an error that names the path.
	res = r.run(t, "netexec", "--name", "missing", "--wait", "done", "/nonexistent/x"+bad+"y")
	res.wantCode(t, exitError)
	check(res, true)
	missing := submittedID(t, res)

	check(r.run(t, "netstatus"), true)
	check(r.run(t, "netstatus", "-j"), true)
	check(r.run(t, "netstatus", "-m"), false)
	res = r.run(t, "netstatus", id)
	res.wantCode(t, 0)
	check(res, true)
	if !strings.Contains(res.stdout, `Args=[-c "exit 3" a`+badEscaped) {
		t.Errorf("netstatus %s lacks the escaped arguments:\n%s", id, res)
	}
	res = r.run(t, "netstatus", missing)
	res.wantCode(t, 0)
	check(res, true)
	res = r.run(t, "netmgr", "history")
	res.wantCode(t, 0)
	check(res, true)
	res = r.run(t, "netmgr", "events")
	res.wantCode(t, 0)
	check(res, true)

	// Commands that fail naming the text: the name given, and the
	// server's answer quoting it.
	for _, args := range [][]string{
		{"netkill", "n" + bad},
		{"netstatus", "n" + bad},
		{"netstatus", "--why", "n" + bad},
		{"netmgr", "logs", "n" + bad},
		{"netmgr", "fetch", "n" + bad},
		{"netmgr", "suspend", "n" + bad},
	} {
		res := r.run(t, args[0], args[1:]...)
		if res.code == 0 {
			t.Errorf("%q succeeded, want it to fail:\n%s", args, res)
		}
		check(res, true)
	}

	// --json stays JSON: it escapes the control bytes itself and decodes
	// to the values as they were.
	res = r.run(t, "netstatus", "-j", "--json")
	res.wantCode(t, 0)
	check(res, false)
	var rows []jobRow
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("decode netstatus -j --json: %v\n%s", err, res)
	}
	var binaries []string
	for _, row := range rows {
		binaries = append(binaries, row.Binary)
	}
	if !strings.Contains(strings.Join(binaries, "|"), link) {
		t.Errorf("netstatus -j --json has binaries %q, want %q among them", binaries, link)
	}
	res = r.run(t, "netstatus", "--json", missing)
	res.wantCode(t, 0)
	check(res, false)
	var job client.Job
	if err := json.Unmarshal([]byte(res.stdout), &job); err != nil {
		t.Fatalf("decode netstatus --json %s: %v\n%s", missing, err, res)
	}
	if len(job.Instances) != 1 || !strings.Contains(job.Instances[0].Error, bad) {
		t.Errorf("netstatus --json %s has instances %+v, want one whose error holds %q", missing, job.Instances, bad)
	}
	if t.Failed() || testing.Verbose() {
		for _, o := range outputs {
			t.Logf("%s", o)
		}
	}
}
