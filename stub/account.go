package stub

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"
	"sync"
	"syscall"
)

// userAccount is what a job's environment says of the account it runs as:
// its HOME, USER and LOGNAME, and SHELL.
type userAccount struct {
	name, home, shell string
}

// passwdFile is the password file the login shell is read from; a test
// may point it elsewhere.
var passwdFile = "/etc/passwd"

// defaultShell is SHELL for an account whose passwd entry names none, as
// login(1) does.
const defaultShell = "/bin/sh"

// account returns the account a job of owner runs as: owner's own when
// cred is set (the stub runs as root and switches to owner), else the
// stub's, which then runs the job. The login shell comes from the passwd
// file; an account found only through NSS (LDAP, sssd) gets /bin/sh.
func account(owner string, cred *syscall.Credential) (userAccount, error) {
	if cred == nil {
		return ownAccount(), nil
	}
	u, err := user.Lookup(owner)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return userAccount{}, fmt.Errorf("run as %q: %w", owner, ErrUnknownOwner)
		}
		return userAccount{}, fmt.Errorf("look up owner %q: %w", owner, err)
	}
	return userAccount{name: u.Username, home: u.HomeDir, shell: loginShell(u.Username)}, nil
}

// ownAccount is the stub's own account, looked up once: the jobs it runs
// without switching users run as it. An account it cannot look up gives
// only SHELL: a job still runs without HOME.
var ownAccount = sync.OnceValue(func() userAccount {
	u, err := user.Current()
	if err != nil {
		return userAccount{shell: defaultShell}
	}
	return userAccount{name: u.Username, home: u.HomeDir, shell: loginShell(u.Username)}
})

// loginShell returns name's shell from the passwd file, or defaultShell.
func loginShell(name string) string {
	f, err := os.Open(passwdFile)
	if err != nil {
		return defaultShell
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// name:password:uid:gid:gecos:home:shell
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 7 && fields[0] == name && fields[6] != "" {
			return fields[6]
		}
	}
	return defaultShell
}
