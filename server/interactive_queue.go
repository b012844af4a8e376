package server

import (
	"github.com/netmgr/netmgr/client/session"
	"github.com/netmgr/netmgr/fsm"
)

// routeInteractive sends an interactive job (netexec -i or --pty: its
// environment holds session.EnvVar) that names no queue to the queue
// the database marks interactive=yes, whose work starts first; a job
// that names a queue, or a database with no such queue, is left as it
// is. The queue chosen is in the Submit entry, so every replica agrees.
func routeInteractive(v fsm.View, spec *fsm.JobSpec) {
	if spec.Queue != "" {
		return
	}
	if _, _, ok, _ := session.FromEnv(spec.Env); !ok {
		return
	}
	db, _ := v.Database()
	spec.Queue = db.InteractiveQueue()
}
