package server

import (
	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/server/cron"
)

// cronToWire renders a cron job's schedule with its next firing, for the
// job's wire form (server/cron reads the expression).
func cronToWire(j *fsm.Job) *client.CronStatus { return cron.ToWire(j) }
