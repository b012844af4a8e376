package main

import (
	"fmt"
	"github.com/netmgr/netmgr/client/files"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/netmgr/netmgr/client"
)

// renderJobDetail writes netstatus JOB: everything about one job, as
// Slurm's scontrol show job does, one Key=Value group a line, then per
// instance one block for each earlier attempt (Instance.History) and one
// for its current attempt.
func renderJobDetail(w io.Writer, job client.Job, now time.Time) error {
	var b strings.Builder
	// line writes the fields that are not empty, a line of their own,
	// indented but for the first field of a block ("JobId=", "Instance=").
	line := func(fields ...string) {
		var kept []string
		for _, f := range fields {
			if f != "" {
				kept = append(kept, f)
			}
		}
		if len(kept) == 0 {
			return
		}
		if !strings.HasPrefix(kept[0], "JobId=") && !strings.HasPrefix(kept[0], "Instance=") {
			b.WriteString("   ")
		}
		b.WriteString(strings.Join(kept, " ") + "\n")
	}
	// kv is one Key=Value field, its value escaped (printable): names,
	// arguments, paths, reasons and machines are users' text.
	kv := func(k, v string) string {
		if v == "" {
			return ""
		}
		return k + "=" + printable(v)
	}
	line(kv("JobId", fmt.Sprint(job.ID)), kv("Name", jobDisplayName(job)), kv("Owner", job.Owner), kv("State", job.State),
		kv("Queue", instanceQueue(job, client.Instance{})), kv("Priority", nonZero(job.Spec.Priority)))
	line(kv("Submitted", formatStamp(job.SubmittedAt, now)))
	s := job.Spec
	line(kv("Binary", jobBinaries(s)), kv("Args", quoteArgs(s.Args)), kv("Dir", s.Dir))
	line(kv("Instances", fmt.Sprint(len(job.Instances))), kv("Restart", s.Restart), kv("MaxRestarts", nonZero(s.MaxRestarts)))
	line(kv("Keys", strings.Join(s.Keys, ",")), kv("Machines", strings.Join(s.Machines, ",")), kv("Mounts", strings.Join(s.Mounts, ",")),
		kv("MemoryMB", nonZero64(s.MemoryMB)), kv("Unique", yes(s.Unique)), kv("MaxPerMachine", nonZero(s.MaxPerMachine)),
		kv("Gang", yes(s.Gang)))
	line(kv("CPUs", nonZero(s.CPUs)), kv("ExclusiveCPUs", yes(s.ExclusiveCPUs)), kv("GPUs", gpuRequest(s)),
		kv("Gres", formatCounts(s.Gres)), kv("DiskMB", nonZero64(s.DiskMB)), kv("Licenses", formatCounts(s.Licenses)))
	var deps []string
	for _, d := range job.Dependencies {
		name := fmt.Sprint(d.JobID)
		if d.Name != "" {
			name += "(" + d.Name + ")"
		}
		deps = append(deps, fmt.Sprintf("%s:%s[%s,%s]", d.Kind, name, orDash(d.State), d.Verdict))
	}
	line(kv("Dependencies", strings.Join(deps, " ")))
	line(kv("Mail", s.Mail), kv("MailType", strings.Join(s.MailType, ",")))
	copyIn := strings.Join(s.CopyIn, ",")
	if copyIn != "" && s.CopyInSize > 0 {
		copyIn += "(" + strings.ReplaceAll(files.Size(s.CopyInSize), " ", "") + ")"
	}
	line(kv("CopyIn", copyIn), kv("CopyOut", strings.Join(s.CopyOut, ",")))
	if job.Cron != nil {
		line(kv("Cron", s.Cron), kv("Where", cronWhere(job.Cron)))
	}
	if job.CronJob != 0 {
		line(kv("CronJob", fmt.Sprint(job.CronJob)), kv("Scheduled", formatStamp(job.Scheduled, now)))
	}
	for _, in := range sortedInstances(job.Instances) {
		for _, h := range in.History {
			past := client.Instance{Attempt: h.Attempt, State: h.State, ExitCode: h.ExitCode, Signal: h.Signal, Error: h.Error,
				Reason: h.Reason, StartedAt: h.StartedAt, EndedAt: h.EndedAt, UserMS: h.UserMS, SysMS: h.SysMS, MaxRSSKB: h.MaxRSSKB}
			line("Instance="+fmt.Sprint(in.Index), kv("Attempt", fmt.Sprint(h.Attempt)), kv("State", endState(past)), kv("Machine", h.Machine))
			line(kv("Placed", formatStamp(h.PlacedAt, now)), kv("Started", formatStamp(h.StartedAt, now)), kv("Ended", formatStamp(h.EndedAt, now)),
				kv("Elapsed", elapsed(past, now)))
			line(kv("Exit", exitOf(past)), kv("Signal", h.Signal), kv("CPU", cpuTime(past)), kv("MaxRSS", maxRSS(past)))
			line(kv("Error", quoteIf(h.Error)), kv("Reason", quoteIf(h.Reason)))
		}
		line("Instance="+fmt.Sprint(in.Index), kv("Attempt", fmt.Sprint(in.Attempt)), kv("State", endState(in)),
			kv("Machine", in.Machine), kv("GPUs", intList(in.GPUs)), kv("PID", nonZero(in.PID)), kv("Restarts", nonZero(in.Restarts)))
		line(kv("Placed", formatStamp(in.PlacedAt, now)), kv("Started", formatStamp(in.StartedAt, now)), kv("Ended", formatStamp(in.EndedAt, now)),
			kv("Elapsed", elapsed(in, now)))
		if in.Finished() {
			line(kv("Exit", exitOf(in)), kv("Signal", in.Signal), kv("CPU", cpuTime(in)), kv("MaxRSS", maxRSS(in)))
		}
		line(kv("Error", quoteIf(in.Error)), kv("Reason", quoteIf(in.Reason)), kv("NotBefore", formatStamp(in.NotBefore, now)))
		if o, ok := outputOf(job, in.Index); ok {
			line(kv("Outputs", strings.Join(o.Files, ",")), kv("OutputsAttempt", fmt.Sprint(o.Attempt)), kv("NotKept", quoteIf(strings.Join(o.Lost, "; "))))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// exitOf is the exit status of an attempt that ended by exiting; "" for
// one that did not (signalled, lost, never started).
func exitOf(in client.Instance) string {
	if in.State == client.InstanceExited || in.State == client.InstanceFailed && in.Error == "" {
		return fmt.Sprint(in.ExitCode)
	}
	return ""
}

// formatStamp prints a time to the second in now's location, "" when it
// is zero.
func formatStamp(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(now.Location()).Format("2006-01-02T15:04:05")
}

// elapsed is how long the instance's attempt ran, or has run by now; ""
// before it started.
func elapsed(in client.Instance, now time.Time) string {
	switch {
	case in.StartedAt.IsZero():
		return ""
	case !in.EndedAt.IsZero():
		return in.EndedAt.Sub(in.StartedAt).Round(time.Second).String()
	}
	return now.Sub(in.StartedAt).Round(time.Second).String()
}

// cpuTime is the attempt's user+system CPU time; "" when none was
// recorded.
func cpuTime(in client.Instance) string {
	if in.UserMS+in.SysMS == 0 {
		return ""
	}
	return (time.Duration(in.UserMS+in.SysMS) * time.Millisecond).String()
}

// maxRSS is the attempt's peak memory; "" when none was recorded.
func maxRSS(in client.Instance) string {
	if in.MaxRSSKB == 0 {
		return ""
	}
	return formatMemory((in.MaxRSSKB + 1023) / 1024)
}

func nonZero(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func nonZero64(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// quoteIf quotes s when it holds a space, so that Key=Value stays one
// field to the eye. The quoting (Go's %q) escapes control characters; the
// caller escapes the rest with printable.
func quoteIf(s string) string {
	if strings.ContainsAny(s, " \t") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// quoteArgs lists arguments, each quoted when it holds a space.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = quoteIf(a)
	}
	if len(out) == 0 {
		return ""
	}
	return "[" + strings.Join(out, " ") + "]"
}

// jobFilter selects the jobs netstatus -j lists; an empty field selects
// all.
type jobFilter struct {
	names  []string // job names (name, name.owner) or ids
	user   string
	states []string
	queue  string
}

// filterJobs returns the jobs f selects. A job is selected by --state when
// its own state or one of its instances' is named; only those instances
// are then kept, unless the job's state was named.
func filterJobs(jobs []client.Job, f jobFilter) []client.Job {
	var out []client.Job
	for _, job := range jobs {
		if f.user != "" && job.Owner != f.user {
			continue
		}
		if f.queue != "" && instanceQueue(job, client.Instance{}) != f.queue {
			continue
		}
		if len(f.names) > 0 && !slices.ContainsFunc(f.names, func(n string) bool {
			return n == fmt.Sprint(job.ID) || n == job.Name || n == jobDisplayName(job) || n == job.Name+"."+job.Owner
		}) {
			continue
		}
		if len(f.states) > 0 && !slices.Contains(f.states, job.State) {
			var ins []client.Instance
			for _, in := range job.Instances {
				if slices.Contains(f.states, in.State) {
					ins = append(ins, in)
				}
			}
			if len(ins) == 0 {
				continue
			}
			job.Instances = ins
		}
		out = append(out, job)
	}
	return out
}
