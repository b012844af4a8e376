package stub

import (
	"fmt"
	"os"
)

// supervisorEnv, set in a process's environment, names the supervisor
// directory of the attempt the process is to supervise.
const supervisorEnv = "NETMGR_SUPERVISOR_DIR"

// init turns the process into a supervisor when the stub started it as
// one: the stub re-executes its own binary (/proc/self/exe, which may be
// the netmgr binary, or a test binary running an in-process stub) with
// hostEnv set (its supervisor host) or supervisorEnv set (a supervisor of
// one attempt). Doing it here, before main, lets every binary that links
// the stub act as the supervisor without a hook of its own; the netmgr
// binary also offers both as `netmgr supervise` for running one by hand.
func init() {
	if root, ok := os.LookupEnv(hostEnv); ok {
		if err := SuperviseHost(root); err != nil {
			fmt.Fprintf(os.Stderr, "netmgr supervise --host: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, ok := os.LookupEnv(supervisorEnv)
	if !ok {
		return
	}
	if err := Supervise(dir); err != nil {
		fmt.Fprintf(os.Stderr, "netmgr supervise: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
