package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// sortedWhy orders the explanations by instance.
func sortedWhy(ws []client.WhyInstance) []client.WhyInstance {
	out := append([]client.WhyInstance(nil), ws...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out
}

// whyReason is the server's one-line reason, or, when it sent none, a line
// built from the rejections the way the matcher builds it: "8 machines lack
// key mathlab; 3 have mem<=10".
func whyReason(w client.WhyInstance) string {
	if w.Reason != "" {
		return w.Reason
	}
	if len(w.Rejections) == 0 {
		return "no machine turned it down; it waits for the scheduler's next pass"
	}
	var b strings.Builder
	for i, r := range w.Rejections {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strconv.Itoa(r.Count))
		if i == 0 {
			if r.Count == 1 {
				b.WriteString(" machine")
			} else {
				b.WriteString(" machines")
			}
		}
		b.WriteString(" " + r.Reason)
	}
	return b.String()
}

// renderWhy writes netstatus --why: one line per queued instance, such as
// "instance 2 (attempt 1): 8 machines lack key mathlab; 3 have mem<=10",
// or "instance 0 (attempt 1): held(dependency): waits for job 12
// (running)"; when none is queued, why a cancelled job never ran, or that
// the job has no queued instances. A cron job has none: its schedule, next
// firing and runs are said instead.
func renderWhy(w io.Writer, job client.Job, ws []client.WhyInstance) error {
	if len(ws) == 0 && job.Cron != nil {
		name, owner := printable(job.Name), printable(job.Owner)
		_, err := fmt.Fprintf(w, "job %s.%s is a cron job (%s): %s; each run is a job of its own, %s.%s#N\n",
			name, owner, job.State, printable(cronWhere(job.Cron)), name, owner)
		return err
	}
	if len(ws) == 0 && job.State == client.JobCancelled {
		reason := ""
		for _, in := range job.Instances {
			if in.State == client.InstanceCancelled {
				reason = in.Reason
				break
			}
		}
		_, err := fmt.Fprintf(w, "job %s.%s is %s: %s\n", printable(job.Name), printable(job.Owner), client.JobCancelled, printable(reason))
		return err
	}
	if len(ws) == 0 {
		_, err := fmt.Fprintf(w, "job %s.%s has no queued instances\n", printable(job.Name), printable(job.Owner))
		return err
	}
	for _, x := range sortedWhy(ws) {
		if _, err := fmt.Fprintf(w, "instance %d (attempt %d): %s\n", x.Instance, x.Attempt, printable(whyReason(x))); err != nil {
			return err
		}
	}
	return nil
}

// whyRow is one object of netstatus --why --json.
type whyRow struct {
	Instance   int            `json:"instance"`
	Attempt    uint64         `json:"attempt"`
	Reason     string         `json:"reason"`
	Rejections []rejectionRow `json:"rejections"`
}

// rejectionRow is how many machines one filter removed.
type rejectionRow struct {
	Filter string `json:"filter"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// renderWhyJSON writes netstatus --why --json: an array with one object per
// queued instance ([] when none is queued).
func renderWhyJSON(w io.Writer, ws []client.WhyInstance) error {
	rows := []whyRow{}
	for _, x := range sortedWhy(ws) {
		row := whyRow{Instance: x.Instance, Attempt: x.Attempt, Reason: whyReason(x), Rejections: []rejectionRow{}}
		for _, r := range x.Rejections {
			row.Rejections = append(row.Rejections, rejectionRow(r))
		}
		rows = append(rows, row)
	}
	return writeJSON(w, rows)
}
