package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/netmgr/netmgr/client"
)

// unsetExported unsets, for the test, what netexec exports by default, so
// that the spec it submits does not depend on the environment the tests
// run in.
func unsetExported(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range defaultExport {
			if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || name == p {
				t.Setenv(name, "") // restores it after the test
				if err := os.Unsetenv(name); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestExportEnv(t *testing.T) {
	environ := []string{"LANG=de_DE.UTF-8", "LC_TIME=C", "TZ=Europe/Berlin", "HOME=/home/fred", "PATH=/usr/bin",
		"NETMGR_ADDR=https://s1:4646", "NETMGR_TOKEN=nmt_secret", "PWD=/tmp", "FOO=bar", "BASH_FUNC_f%%=() { :; }"}
	tests := []struct {
		name   string
		export string
		env    []string // the spec's own env
		want   []string
		err    string
	}{
		{name: "default", want: []string{"LANG=de_DE.UTF-8", "LC_TIME=C", "TZ=Europe/Berlin"}},
		{name: "default under --env", env: []string{"LANG=C"}, want: []string{"LC_TIME=C", "TZ=Europe/Berlin", "LANG=C"}},
		{name: "none", export: "NONE", env: []string{"A=b"}, want: []string{"A=b"}},
		{name: "names", export: "FOO,HOME,UNSET", want: []string{"FOO=bar", "HOME=/home/fred"}},
		{name: "name and value", export: "FOO,X=y", want: []string{"FOO=bar", "X=y"}},
		{name: "all leaves netmgr's and the session's", export: "ALL", want: []string{"LANG=de_DE.UTF-8", "LC_TIME=C",
			"TZ=Europe/Berlin", "HOME=/home/fred", "PATH=/usr/bin", "FOO=bar"}},
		{name: "all with a value", export: "ALL,FOO=baz", want: []string{"LANG=de_DE.UTF-8", "LC_TIME=C",
			"TZ=Europe/Berlin", "HOME=/home/fred", "PATH=/usr/bin", "FOO=baz"}},
		{name: "none among others", export: "FOO,NONE", err: "NONE stands alone"},
		{name: "bad name", export: "A-B", err: `"A-B" is not a variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := client.JobSpec{Env: tt.env}
			err := exportEnv(&js, tt.export, environ)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("exportEnv() error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(js.Env, tt.want) {
				t.Errorf("got env %q, want %q", js.Env, tt.want)
			}
		})
	}
}

func TestResolvePaths(t *testing.T) {
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "myjob.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(cwd, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		binaries map[string]string
		args     []string
		dir      string
		want     client.JobSpec
		err      string
	}{
		{name: "relative binary", binaries: map[string]string{"*": "./myjob.sh"}, args: []string{"./in", "../out", "x/y", "-v"},
			want: client.JobSpec{Binaries: map[string]string{"*": cwd + "/myjob.sh"}, Args: []string{cwd + "/in", filepath.Dir(cwd) + "/out", "x/y", "-v"}}},
		{name: "absolute and bare stay", binaries: map[string]string{"sparc": "/bin/sh", "mips": "sh"},
			want: client.JobSpec{Binaries: map[string]string{"sparc": "/bin/sh", "mips": "sh"}}},
		{name: "missing binary", binaries: map[string]string{"*": "./nope.sh"}, err: "./nope.sh: no such file in " + cwd},
		{name: "relative chdir", binaries: map[string]string{"*": "/bin/sh"}, dir: "work",
			want: client.JobSpec{Binaries: map[string]string{"*": "/bin/sh"}, Dir: cwd + "/work"}},
		{name: "absolute chdir not checked", binaries: map[string]string{"*": "/bin/sh"}, dir: "/elsewhere/./x",
			want: client.JobSpec{Binaries: map[string]string{"*": "/bin/sh"}, Dir: "/elsewhere/x"}},
		{name: "missing chdir", binaries: map[string]string{"*": "/bin/sh"}, dir: "nowhere", err: "--chdir nowhere: no such directory"},
		{name: "chdir to a file", binaries: map[string]string{"*": "/bin/sh"}, dir: "myjob.sh", err: "--chdir myjob.sh: no such directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := client.JobSpec{Binaries: tt.binaries, Args: tt.args}
			err := resolvePaths(&js, tt.dir, cwd, pathExists)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("resolvePaths() error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(js, tt.want) {
				t.Errorf("got %#v, want %#v", js, tt.want)
			}
		})
	}
}
