package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCompletionGolden(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			code, out, errOut := runCLI(t, "netmgr", "completion", shell)
			if code != exitOK {
				t.Fatalf("netmgr completion %s: exit %d, stderr %q", shell, code, errOut)
			}
			golden(t, "completion."+shell+".golden", []byte(out))
			for _, name := range append([]string{"netmgr"}, linkNames()...) {
				if !strings.Contains(out, name) {
					t.Errorf("the %s script does not mention %s", shell, name)
				}
			}
		})
	}
}

func TestCompletionUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no shell", []string{"netmgr", "completion"}, "netmgr completion: give one shell: bash, zsh or fish"},
		{"unknown shell", []string{"netmgr", "completion", "tcsh"}, `netmgr completion: unknown shell "tcsh"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage || !strings.HasPrefix(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
}

// TestBashCompletion loads the bash script into a real bash with the
// binary and its links on PATH and completes words as a user would.
func TestBashCompletion(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds the binary")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("skipping: no bash on this machine")
	}
	dir := t.TempDir()
	bin := netmgrBinary(t)
	for _, name := range append([]string{"netmgr"}, linkNames()...) {
		if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		words []string // the last is the word being completed
		want  string
	}{
		{"subcommand", []string{"netmgr", "sta"}, "status"},
		{"nested subcommand", []string{"netmgr", "admin", "qu"}, "queue"},
		{"completion's shell", []string{"netmgr", "completion", "fi"}, "fish"},
		{"netmgr option", []string{"netmgr", "status", "--mach"}, "--machines"},
		{"link option", []string{"netstatus", "--mach"}, "--machines"},
		{"netexec option", []string{"netexec", "--wa"}, "--wait"},
		{"netkill option", []string{"netkill", "--sig"}, "--signal"},
		{"reserve option", []string{"reserve", "--fr"}, "--from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := "source <(netmgr completion bash) || exit 1\n" +
				"COMP_WORDS=(" + strings.Join(tt.words, " ") + ")\n" +
				"COMP_CWORD=" + strconv.Itoa(len(tt.words)-1) + "\n" +
				"_netmgr_complete\n" +
				`printf '%s\n' "${COMPREPLY[@]}"` + "\n"
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", script)
			cmd.Env = append(cleanEnv(t.TempDir()), "PATH="+dir+":"+os.Getenv("PATH"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, stderr.String())
			}
			got := strings.Fields(string(out))
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("completing %q gave %q, want [%s]", tt.words, got, tt.want)
			}
		})
	}
}

func TestManPagesGolden(t *testing.T) {
	if !manBuilt {
		t.Skip("built with the tag urfave_cli_no_docs, which leaves the manual page generator out")
	}
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "netmgr", "man", dir)
	if code != exitOK {
		t.Fatalf("netmgr man: exit %d, stderr %q", code, errOut)
	}
	for _, name := range append([]string{"netmgr"}, linkNames()...) {
		t.Run(name, func(t *testing.T) {
			page, err := os.ReadFile(filepath.Join(dir, name+".1"))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("man", name+".1"), page)
			if !bytes.Contains(page, []byte(".TH "+name+" 1")) {
				t.Errorf("%s.1 lacks its title line .TH %s 1", name, name)
			}
			if name == "netexec" && !bytes.Contains(page, []byte("job<ID>")) {
				t.Errorf("netexec.1 lost the '<ID>' of job<ID> to Markdown")
			}
		})
	}
}
