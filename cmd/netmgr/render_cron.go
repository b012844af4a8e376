package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// jobDisplayName is how netstatus names a job: NAME.OWNER, as the paper
// does; a run of a cron job is named NAME.OWNER#N already.
func jobDisplayName(job client.Job) string {
	if job.CronJob != 0 {
		return job.Name
	}
	return job.Name + "." + job.Owner
}

// cronWhere is the WHERE column of a cron job's row: its schedule, its
// next firing (RFC 3339, UTC) or who ended it, and how many runs it made
// and firings it skipped.
func cronWhere(c *client.CronStatus) string {
	parts := []string{"cron " + strconv.Quote(c.Schedule)}
	switch {
	case c.Ended && c.EndedBy != "":
		parts = append(parts, "ended by "+c.EndedBy)
	case c.Ended:
		parts = append(parts, "ended")
	case !c.Next.IsZero():
		parts = append(parts, "next "+c.Next.UTC().Format(time.RFC3339))
	}
	parts = append(parts, fmt.Sprintf("%d runs", len(c.Runs)))
	if c.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", c.Skipped))
	}
	return strings.Join(parts, ", ")
}
