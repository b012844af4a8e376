package stub

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"testing"

	"github.com/netmgr/netmgr/client"
)

func TestLoginShell(t *testing.T) {
	path := filepath.Join(t.TempDir(), "passwd")
	data := "root:x:0:0:root:/root:/bin/bash\nfred:x:1000:1000:Fred,,,:/home/fred:/usr/bin/zsh\nnoshell:x:1001:1001::/home/n:\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	old := passwdFile
	passwdFile = path
	t.Cleanup(func() { passwdFile = old })
	for _, tc := range []struct{ name, want string }{
		{"fred", "/usr/bin/zsh"}, {"root", "/bin/bash"}, {"noshell", defaultShell}, {"absent", defaultShell},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loginShell(tc.name); got != tc.want {
				t.Errorf("loginShell(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// TestEnvironAccount checks a job gets HOME, USER, LOGNAME and SHELL of
// its account, and that a variable its own env sets wins.
func TestEnvironAccount(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	acct, err := account(me.Username, nil) // no switch: the stub's own account
	if err != nil {
		t.Fatal(err)
	}
	if acct.name != me.Username || acct.home != me.HomeDir || acct.shell == "" {
		t.Fatalf("account() = %+v, want %s's with a shell", acct, me.Username)
	}
	r := &runner{machine: "m1"}
	k := client.AttemptRef{JobID: 4, Instance: 1, Attempt: 2}
	env := r.environ(k, client.StartRequest{JobName: "j", Env: []string{"HOME=/elsewhere", "A=b"}}, acct)
	for _, want := range []string{"HOME=/elsewhere", "A=b", "USER=" + me.Username, "LOGNAME=" + me.Username,
		"SHELL=" + acct.shell, "NETMGR_JOB_ID=4", "NETMGR_MACHINE=m1"} {
		if !slices.Contains(env, want) {
			t.Errorf("environ() = %q, want it to hold %q", env, want)
		}
	}
	if slices.Contains(env, "HOME="+me.HomeDir) {
		t.Errorf("environ() = %q: the account's HOME overrides the job's", env)
	}
}
