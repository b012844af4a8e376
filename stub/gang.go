package stub

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/internal/beneath"
)

// HostFileName is the name of the host file of a gang job's instance in
// its exec dir: the gang's machines, one a line, in instance order (the
// equivalent of PBS's node file), named by NETMGR_GANG_HOSTFILE.
const HostFileName = "hostfile"

// gangEnviron writes the host file of a gang instance into its exec dir
// dir and returns the variables that tell the job its gang:
// NETMGR_GANG_HOSTS (the machines, comma-separated, in instance order),
// NETMGR_GANG_RANK (this instance's index among them), NETMGR_GANG_SIZE
// and NETMGR_GANG_HOSTFILE. It returns none for a job that is not a
// gang.
func gangEnviron(k client.AttemptRef, req client.StartRequest, dir string) ([]string, error) {
	if len(req.GangHosts) == 0 {
		return nil, nil
	}
	// Through beneath: a copy_in may have put a link of that name there.
	d, err := beneath.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("write host file: %w", err)
	}
	defer d.Close()
	if err := d.WriteFile(HostFileName, []byte(strings.Join(req.GangHosts, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write host file: %w", err)
	}
	path := filepath.Join(dir, HostFileName)
	return []string{
		"NETMGR_GANG_HOSTS=" + strings.Join(req.GangHosts, ","),
		"NETMGR_GANG_RANK=" + strconv.Itoa(k.Instance),
		"NETMGR_GANG_SIZE=" + strconv.Itoa(len(req.GangHosts)),
		"NETMGR_GANG_HOSTFILE=" + path,
	}, nil
}
