package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client"
)

// columnSep splits a table header into its columns: they are two spaces
// or more apart, a column's own words one.
var columnSep = regexp.MustCompile(`\s{2,}`)

// statusHeaders renders every netstatus table with no rows and returns
// each header's columns, by the flag that prints the table.
func statusHeaders(t *testing.T) map[string][]string {
	t.Helper()
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	out := make(map[string][]string)
	for flag, render := range map[string]func(*bytes.Buffer) error{
		"-j": func(b *bytes.Buffer) error { return renderJobs(b, nil, now) },
		"-m": func(b *bytes.Buffer) error { return renderMachines(b, nil, now) },
		"-s": func(b *bytes.Buffer) error { return renderServers(b, nil) },
		"-q": func(b *bytes.Buffer) error {
			return renderQueues(b, []client.Queue{{Prime: &client.QueuePrime{}}}, now)
		},
		"-r":         func(b *bytes.Buffer) error { return renderReservations(b, nil, now) },
		"--licenses": func(b *bytes.Buffer) error { return renderLicenses(b, nil) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatalf("render netstatus %s: %v", flag, err)
		}
		header, _, _ := strings.Cut(b.String(), "\n")
		out[flag] = columnSep.Split(strings.TrimSpace(header), -1)
	}
	return out
}

// statusWords returns the state words netstatus prints, by the flag and
// column that prints them, rendered by the CLI's own functions from every
// state the API reports. A state added to the API belongs here.
func statusWords() map[string][]string {
	var jobs []string
	for _, in := range []client.Instance{
		{State: client.InstanceQueued}, {State: client.InstancePlaced}, {State: client.InstanceRunning},
		{State: client.InstanceSuspended}, {State: client.InstanceUnknown},
		{State: client.InstanceExited}, {State: client.InstanceFailed, ExitCode: 3},
		{State: client.InstanceFailed, Error: "exec: no such file"}, {State: client.InstanceSignaled, Signal: "KILL"},
		{State: client.InstanceKilled}, {State: client.InstanceLost},
		{State: client.InstanceHeld}, {State: client.InstanceCancelled},
		{State: client.InstanceKilled, Reason: "timeout: run limit of 200m exceeded"},
		{State: client.InstanceKilled, Reason: "memory: memory limit of 20 MB exceeded"},
		{State: client.InstanceExited, Attempt: 3},
	} {
		jobs = append(jobs, instanceState(in))
	}
	var machines []string
	for _, st := range []string{client.MachineUp, client.MachineDown, client.MachineDraining,
		client.MachineAsleep, client.MachineSuspect, client.MachineRestarting, client.MachineUnreachable} {
		machines = append(machines, machineStateColumn(client.Machine{State: st}))
	}
	var health []string
	for _, s := range []client.Server{{Healthy: true}, {Problem: "why"}, {Error: "refused"}} {
		health = append(health, serverHealth(s))
	}
	return map[string][]string{
		"-j STATE":  jobs,
		"-m STATE":  machines,
		"-s ROLE":   {"leader", "follower", "candidate", "shutdown", "unknown"}, // server/self.go's roles, and renderServers' own
		"-s HEALTH": health,
	}
}

// TestStatusHelpMatchesOutput checks that every column of every netstatus
// table and every state word it prints is named in netstatus --help, and
// keeps them in testdata/status_words.golden so that a change to either
// shows in review.
func TestStatusHelpMatchesOutput(t *testing.T) {
	help := statusCommand().Description
	flat := strings.Join(strings.Fields(help), " ") // the help's lines wrap anywhere
	headers := statusHeaders(t)
	words := statusWords()

	var out bytes.Buffer
	for _, flag := range slices.Sorted(maps.Keys(headers)) {
		fmt.Fprintf(&out, "netstatus %s columns: %s\n", flag, strings.Join(headers[flag], " | "))
		for _, col := range headers[flag] {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(col) + `\b`).MatchString(flat) {
				t.Errorf("netstatus %s prints column %s, which netstatus --help does not name", flag, col)
			}
		}
	}
	for _, what := range slices.Sorted(maps.Keys(words)) {
		fmt.Fprintf(&out, "netstatus %s words: %s\n", what, strings.Join(words[what], " | "))
		for _, w := range words[what] {
			if !strings.Contains(flat, w) {
				t.Errorf("netstatus %s prints %q, which netstatus --help does not name", what, w)
			}
		}
	}
	golden(t, "status_words.golden", out.Bytes())
}

// readmePending names the states the README does not explain yet, and
// why: the text for it waits to be merged (README.md is edited by one
// hand at a time). Remove an entry once the README has it.
var readmePending = map[string]string{}

// readmeFiles are the README and the guides its sections moved their
// netstatus tables into (doc/sharing.md: netstatus -q's header).
var readmeFiles = []string{"README.md", filepath.Join("doc", "sharing.md")}

// TestReadmeTablesMatchOutput checks the README, with the guides of
// readmeFiles, against netstatus: every table header they show (a line
// that starts with a header's first two columns) is the header netstatus
// prints, and every state netstatus -m prints is explained there.
func TestReadmeTablesMatchOutput(t *testing.T) {
	readme := ""
	for _, name := range readmeFiles {
		data, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		readme += string(data) + "\n"
	}
	headers := statusHeaders(t)
	shown := 0
	for _, line := range strings.Split(readme, "\n") {
		cols := columnSep.Split(strings.TrimSpace(line), -1)
		if len(cols) < 2 {
			continue
		}
		for _, flag := range slices.Sorted(maps.Keys(headers)) {
			want := headers[flag]
			if cols[0] != want[0] || cols[1] != want[1] {
				continue
			}
			shown++
			if !slices.Equal(cols, want) {
				t.Errorf("README shows the netstatus %s header as\n  %s\nnetstatus prints\n  %s", flag, strings.Join(cols, "  "), strings.Join(want, "  "))
			}
		}
	}
	if shown == 0 {
		t.Errorf("README shows no netstatus table header")
	}
	for _, st := range statusWords()["-m STATE"] {
		if strings.Contains(readme, "`"+st+"`") || strings.Contains(readme, st+" (") {
			continue
		}
		if why, ok := readmePending[st]; ok {
			t.Logf("README does not explain machine state %s yet: %s", st, why)
			continue
		}
		t.Errorf("README does not explain machine state %s, which netstatus -m prints", st)
	}
}

// TestRefusedOptionsMarked checks that every netexec option the servers
// refuse as not supported yet says so in its help, and no other does.
func TestRefusedOptionsMarked(t *testing.T) {
	// server/validate.go refuses these spec options as not supported yet:
	// none since copy_in and copy_out are honoured (issue 16).
	refused := map[string]bool{}
	for _, f := range execCommand().Flags {
		name := f.Names()[0]
		usage := ""
		if u, ok := f.(interface{ GetUsage() string }); ok {
			usage = u.GetUsage()
		}
		want := refused[name]
		if got := strings.Contains(usage, refusedNote); got != want {
			t.Errorf("netexec --%s help %q: marked refused = %v, want %v", name, usage, got, want)
		}
	}
}
