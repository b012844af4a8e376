package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netmgr/netmgr/client"
)

// The render functions are pure: they sort copies of what they are given
// and write a table or JSON to w.

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

func sortedJobs(jobs []client.Job) []client.Job {
	js := append([]client.Job(nil), jobs...)
	sort.SliceStable(js, func(i, j int) bool { return js[i].ID < js[j].ID })
	return js
}

func sortedInstances(ins []client.Instance) []client.Instance {
	out := append([]client.Instance(nil), ins...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// jobBinaries lists a job's binaries, in key order and without repeats, for
// instances that have not been given one yet.
func jobBinaries(s client.JobSpec) string {
	keys := make([]string, 0, len(s.Binaries))
	for k := range s.Binaries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var paths []string
	seen := map[string]bool{}
	for _, k := range keys {
		if p := s.Binaries[k]; !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return strings.Join(paths, ",")
}

// instanceBinary is the binary an instance runs, or the job's binaries
// while none is chosen.
func instanceBinary(job client.Job, in client.Instance) string {
	if in.Binary != "" {
		return in.Binary
	}
	return jobBinaries(job.Spec)
}

// Limits an instance can be ended by, as the STATE column names them:
// the first word of the Reason a supervisor gives ("timeout: run limit of
// 200m exceeded"), or how a supervisor of before the word began it ("run
// limit of 200m exceeded").
var limitReasons = []struct{ prefix, name string }{
	{"timeout:", "timeout"},
	{"memory:", "memory"},
	{"run limit", "timeout"},
	{"memory limit", "memory"},
}

// limitReason names the limit that ended an instance, "timeout" or
// "memory", from its Reason; it is "" when the instance did not end by a
// limit.
func limitReason(reason string) string {
	r := strings.ToLower(strings.TrimSpace(reason))
	for _, l := range limitReasons {
		if strings.HasPrefix(r, l.prefix) {
			return l.name
		}
	}
	return ""
}

// instanceState is the STATE column: running, suspended, exited(0),
// failed(3), failed(exec: no such file), signaled(KILL), killed, lost,
// placed, queued, held(dependency), cancelled(dependency); an instance a
// limit ended shows the limit instead of the detail: killed(timeout),
// killed(memory). A finished instance that took more than one attempt
// adds " after N attempts".
func instanceState(in client.Instance) string {
	switch in.State {
	case client.InstanceHeld:
		return client.JobHeld
	case client.InstanceCancelled:
		return client.JobCancelled
	}
	return endState(in) + retries(in)
}

// endState is instanceState without the retries.
func endState(in client.Instance) string {
	if l := limitReason(in.Reason); l != "" && in.Finished() {
		return in.State + "(" + l + ")"
	}
	switch in.State {
	case client.InstanceExited:
		return fmt.Sprintf("exited(%d)", in.ExitCode)
	case client.InstanceFailed:
		if in.Error != "" {
			return "failed(exec: " + execProblem(in.Error) + ")"
		}
		return fmt.Sprintf("failed(%d)", in.ExitCode)
	case client.InstanceSignaled:
		return fmt.Sprintf("signaled(%s)", orDash(in.Signal))
	}
	return in.State
}

// execProblem is the gist of why an attempt could not start: the last
// part of its error ("exec: fork/exec /bin/x: permission denied" is
// "permission denied"), shortened for the usual "no such file or
// directory".
func execProblem(err string) string {
	if i := strings.LastIndex(err, ": "); i >= 0 {
		err = err[i+2:]
	}
	return strings.TrimSuffix(err, " or directory")
}

// retries is " after N attempts" for a finished instance that took more
// than one attempt, "" otherwise.
func retries(in client.Instance) string {
	if !in.Finished() || in.Attempt <= 1 {
		return ""
	}
	return fmt.Sprintf(" after %d attempts", in.Attempt)
}

// plural returns "1 instance" or "N instances".
func plural(n int) string {
	if n == 1 {
		return "1 instance"
	}
	return fmt.Sprintf("%d instances", n)
}

// renderJobs writes the netstatus -j table: one row per instance that has a
// machine; then per job one "N instances queued" row for its queued
// instances, one "N instances held" row for instances held for the job's
// dependencies, and one "N instances never ran" row per state for
// instances that ended without a machine (killed while queued, cancelled
// for a dependency); a cancelled job's reason follows on its own row. A
// cron job has one row: its schedule, next firing and runs (each run is a
// job of its own, NAME.OWNER#N). Each row has the instance's number and
// current attempt ("-" on a row for several), when the job was submitted
// and the attempt started (formatWhen), and how long it ran or has run.
func renderJobs(w io.Writer, jobs []client.Job, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tJOB NAME\tINST\tATTEMPT\tBINARY NAME\tWHERE\tSUBMITTED\tSTARTED\tELAPSED\tSTATE")
	for _, job := range sortedJobs(jobs) {
		name := printable(jobDisplayName(job))
		submitted := "-"
		if !job.SubmittedAt.IsZero() {
			submitted = formatWhen(job.SubmittedAt, now)
		}
		// row writes one row; inst and attempt are "-" on a row that
		// stands for several instances. The binary, machine and state
		// (which holds an exec error) are escaped: users chose them.
		row := func(inst, attempt, binary, where, started, elapsed, state string) {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", job.ID, name, inst, attempt,
				printable(binary), printable(where), submitted, started, elapsed, printable(state))
		}
		if job.Cron != nil {
			row("-", "-", jobBinaries(job.Spec), cronWhere(job.Cron), "-", "-", job.State)
			continue
		}
		queued, held := 0, 0
		var cancelReason string
		unplaced := map[string]int{} // instance state -> count
		var states []string
		for _, in := range sortedInstances(job.Instances) {
			switch {
			case in.State == client.InstanceQueued:
				queued++
			case in.State == client.InstanceHeld:
				held++
			case in.Machine == "":
				if in.State == client.InstanceCancelled {
					cancelReason = in.Reason
				}
				if unplaced[in.State] == 0 {
					states = append(states, in.State)
				}
				unplaced[in.State]++
			default:
				started := "-"
				if !in.StartedAt.IsZero() {
					started = formatWhen(in.StartedAt, now)
				}
				row(fmt.Sprint(in.Index), fmt.Sprint(in.Attempt), instanceBinary(job, in), in.Machine, started, orDash(elapsed(in, now)), instanceState(in))
			}
		}
		if queued > 0 {
			row("-", "-", jobBinaries(job.Spec), plural(queued)+" queued", "-", "-", client.InstanceQueued)
		}
		if held > 0 {
			row("-", "-", jobBinaries(job.Spec), plural(held)+" held", "-", "-", client.JobHeld)
		}
		sort.Strings(states)
		for _, st := range states {
			row("-", "-", jobBinaries(job.Spec), plural(unplaced[st])+" never ran", "-", "-", instanceState(client.Instance{State: st}))
		}
		if cancelReason != "" {
			fmt.Fprintf(tw, "%d\t%s\t\t\t\t\t\t\t\t%s\n", job.ID, name, printable(cancelReason))
		}
	}
	return tw.Flush()
}

// jobRow is one object of netstatus -j --json: one instance of a job.
type jobRow struct {
	ID       uint64 `json:"id"`
	Name     string `json:"name"`
	Owner    string `json:"owner"`
	JobState string `json:"job_state"`
	Instance int    `json:"instance"`
	Attempt  uint64 `json:"attempt"`
	Binary   string `json:"binary"`
	// Where is the machine, "queued", or "" for an instance that ended
	// without a machine.
	Where    string `json:"where"`
	Machine  string `json:"machine"`
	State    string `json:"state"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Error    string `json:"error,omitempty"`
	// Reason says why the instance ended when it was not its own doing.
	Reason string `json:"reason,omitempty"`
	PID    int    `json:"pid"`
	// Leftovers are processes the attempt left behind, which were killed.
	Leftovers []client.Leftover `json:"leftovers,omitempty"`
	// Queue is the batch queue the job waits or ran in.
	Queue string `json:"queue"`
	// Cron is set on the one row of a cron job (instance -1, where
	// "cron"): its schedule, next firing, runs and skips.
	Cron *client.CronStatus `json:"cron,omitempty"`
	// CronJob and Scheduled are set on the rows of a cron job's run.
	CronJob   uint64    `json:"cron_job,omitempty"`
	Scheduled time.Time `json:"scheduled,omitzero"`
}

// instanceQueue is the queue of an instance: its own, else its job's, else
// the default queue.
func instanceQueue(job client.Job, in client.Instance) string {
	switch {
	case in.Queue != "":
		return in.Queue
	case job.Spec.Queue != "":
		return job.Spec.Queue
	}
	return client.DefaultQueue
}

// renderJobsJSON writes netstatus -j --json: one object per instance,
// queued ones included; state is the instance's state as the API has it.
// A cron job, which has no instances, has one object of instance -1.
func renderJobsJSON(w io.Writer, jobs []client.Job) error {
	rows := []jobRow{}
	for _, job := range sortedJobs(jobs) {
		if job.Cron != nil {
			rows = append(rows, jobRow{
				ID: job.ID, Name: job.Name, Owner: job.Owner, JobState: job.State, Instance: -1,
				Binary: jobBinaries(job.Spec), Where: "cron", State: job.State, Queue: instanceQueue(job, client.Instance{}), Cron: job.Cron,
			})
			continue
		}
		for _, in := range sortedInstances(job.Instances) {
			where := in.Machine
			if in.State == client.InstanceQueued || in.State == client.InstanceHeld {
				where = in.State
			}
			rows = append(rows, jobRow{
				ID: job.ID, Name: job.Name, Owner: job.Owner, JobState: job.State,
				Instance: in.Index, Attempt: in.Attempt, Binary: instanceBinary(job, in),
				Where: where, Machine: in.Machine, State: in.State, ExitCode: in.ExitCode,
				Signal: in.Signal, Error: in.Error, Reason: in.Reason, PID: in.PID,
				Leftovers: in.Leftovers, Queue: instanceQueue(job, in),
				CronJob: job.CronJob, Scheduled: job.Scheduled,
			})
		}
	}
	return writeJSON(w, rows)
}

// formatMemory prints megabytes as 512M or 15.6G.
func formatMemory(mb int64) string {
	if mb < 1024 {
		return fmt.Sprintf("%dM", mb)
	}
	return strconv.FormatFloat(float64(mb)/1024, 'f', 1, 64) + "G"
}

func sortedMachines(ms []client.Machine) []client.Machine {
	out := append([]client.Machine(nil), ms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// renderMachines writes the netstatus -m table, its text escaped
// (printable). MTYPE is the machine type from the database or the stub's
// init file; RATING is the processor
// rating the load balancer divides by; EXECDIRS is the space its exec
// dir's files take (running attempts' and ended ones kept for the
// stub's --exec-retention; "-" under 1 MiB, which stubs do not gossip); RESERVED is who holds the machine
// and until when ("tclark until 16:00", "tclark" for a reservation without
// an end, "-" for none), with times in now's location.
func renderMachines(w io.Writer, ms []client.Machine, now time.Time) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tARCH\tMTYPE\tCPUS\tMEMORY\tRATING\tLOAD\tRUNNING\tEXECDIRS\tSTATE\tRESERVED")
	for _, m := range sortedMachines(ms) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%.2f\t%d\t%s\t%s\t%s\n", printable(m.Name), printable(orDash(m.Arch)),
			printable(orDash(m.MType)), m.CPUs, formatMemory(m.MemoryMB), formatRating(m.Rating), m.Load, m.Running,
			formatDiskUse(m.ExecUsedBytes), printable(machineStateColumn(m)), printable(reservedColumn(m, now)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return renderResources(w, ms)
}

// machineStateColumn is the STATE column of netstatus -m: the state, with
// the problem for which the machine's stub drains it, as in
// "draining (exec dir full: 0 B free)", or the reason its owner policy
// put it to sleep, as in "asleep (console login)".
func machineStateColumn(m client.Machine) string {
	switch {
	case m.Problem != "":
		return m.State + " (" + m.Problem + ")"
	case m.Asleep != "" && m.State == client.MachineAsleep:
		return m.State + " (" + m.Asleep + ")"
	}
	return m.State
}

// reservedColumn is the RESERVED column of netstatus -m.
func reservedColumn(m client.Machine, now time.Time) string {
	switch {
	case m.ReservedBy == "":
		return "-"
	case m.ReservedUntil.IsZero():
		return m.ReservedBy
	}
	return m.ReservedBy + " until " + formatWhen(m.ReservedUntil, now)
}

// formatDiskUse prints bytes as 12K, 512M or 1.5G, and "-" for none.
func formatDiskUse(b int64) string {
	switch {
	case b <= 0:
		return "-"
	case b < 1<<20:
		return fmt.Sprintf("%dK", (b+1023)>>10)
	}
	return formatMemory(b >> 20)
}

// formatRating prints a rating as 16 or 1.5, and "-" when there is none.
func formatRating(r float64) string {
	if r == 0 {
		return "-"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// machineRow is one object of netstatus -m --json. Keys, attrs and mounts
// are always present, empty when the machine has none.
type machineRow struct {
	Name     string  `json:"name"`
	Arch     string  `json:"arch"`
	MType    string  `json:"mtype"`
	CPUs     int     `json:"cpus"`
	Slots    int     `json:"slots"`
	MemoryMB int64   `json:"memory_mb"`
	Rating   float64 `json:"rating"`
	Load     float64 `json:"load"`
	Running  int     `json:"running"`
	// ExecUsedBytes is the space the machine's exec dir takes, 0 when
	// its stub has not said.
	ExecUsedBytes int64              `json:"exec_used_bytes"`
	State         string             `json:"state"`
	Keys          []string           `json:"keys"`
	Attrs         map[string]float64 `json:"attrs"`
	Mounts        []string           `json:"mounts"`
	Declared      bool               `json:"declared"`
	// ReservedBy is the user holding the machine now, "" when none;
	// ReservedUntil is when that reservation ends, null when it has no end
	// or there is none.
	ReservedBy    string     `json:"reserved_by"`
	ReservedUntil *time.Time `json:"reserved_until"`
	// Problem is why the machine's stub drains it, when it does.
	Problem string `json:"problem,omitempty"`
	// Asleep is why its owner policy put it to sleep, when it did.
	Asleep string `json:"asleep,omitempty"`
	// Resources are its GPUs, generic resources and disk, each's total
	// and what is held, when it has any (client.MachineResources).
	Resources *client.MachineResources `json:"resources,omitempty"`
}

// renderMachinesJSON writes netstatus -m --json.
func renderMachinesJSON(w io.Writer, ms []client.Machine) error {
	rows := []machineRow{}
	for _, m := range sortedMachines(ms) {
		row := machineRow{
			Name: m.Name, Arch: m.Arch, MType: m.MType, CPUs: m.CPUs, Slots: m.Slots, MemoryMB: m.MemoryMB,
			Rating: m.Rating, Load: m.Load, Running: m.Running, ExecUsedBytes: m.ExecUsedBytes, State: m.State,
			Keys: append([]string{}, m.Keys...), Attrs: map[string]float64{}, Mounts: append([]string{}, m.Mounts...),
			Declared: m.Declared, ReservedBy: m.ReservedBy, ReservedUntil: optionalTime(m.ReservedUntil),
			Problem: m.Problem, Asleep: m.Asleep, Resources: m.Resources,
		}
		for k, v := range m.Attrs {
			row.Attrs[k] = v
		}
		rows = append(rows, row)
	}
	return writeJSON(w, rows)
}

func sortedServers(ss []client.Server) []client.Server {
	out := append([]client.Server(nil), ss...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// renderServers writes the netstatus -s table, its text escaped
// (printable). A server that did not answer shows its error in the LEADER
// column and is unreachable. HEALTH comes last: an unhealthy server's
// reason may be long.
func renderServers(w io.Writer, ss []client.Server) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tADDRESS\tROLE\tTERM\tLAST INDEX\tLAST CONTACT\tLEADER\tVERSION\tFILES\tHEALTH")
	for _, s := range sortedServers(ss) {
		role := s.Role
		if role == "" {
			role = "unknown"
		}
		leader := orDash(s.Leader)
		if s.Error != "" {
			leader = "error: " + s.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", printable(s.Name), printable(orDash(s.Address)),
			printable(role), s.Term, s.LastIndex, printable(orDash(s.LastContact)), printable(leader), printable(orDash(s.Version)),
			formatDiskUse(s.FilesBytes), printable(serverHealth(s)))
	}
	return tw.Flush()
}

// serverHealth is the HEALTH column: unreachable when the server did not
// answer, else ok or unhealthy as it reports itself, with its reason
// when it gives one: "unhealthy (behind the leader by 169 entries)".
func serverHealth(s client.Server) string {
	switch {
	case s.Error != "":
		return "unreachable"
	case s.Healthy:
		return "ok"
	case s.Problem != "":
		return "unhealthy (" + s.Problem + ")"
	}
	return "unhealthy"
}

// serverRow is one object of netstatus -s --json.
type serverRow struct {
	Name      string `json:"name"`
	Address   string `json:"address"`
	HTTP      string `json:"http,omitempty"`
	Role      string `json:"role"`
	Term      uint64 `json:"term"`
	LastIndex uint64 `json:"last_index"`
	Leader    string `json:"leader"`
	Error     string `json:"error,omitempty"`
	// LastContact is "leader", "never" or how long ago the server heard
	// from the leader; empty when it did not answer.
	LastContact string `json:"last_contact"`
	Healthy     bool   `json:"healthy"`
	// Problem is why the server is unhealthy, when it says.
	Problem string `json:"problem,omitempty"`
	// Version and CommandLevel are the server's build; empty and 0 when
	// it did not answer or is too old to say.
	Version      string `json:"version"`
	CommandLevel int    `json:"command_level"`
	// FilesBytes and Files are what the server's blob store keeps of
	// jobs' copy_in and copy_out files.
	FilesBytes int64 `json:"files_bytes"`
	Files      int   `json:"files"`
}

// renderServersJSON writes netstatus -s --json.
func renderServersJSON(w io.Writer, ss []client.Server) error {
	rows := []serverRow{}
	for _, s := range sortedServers(ss) {
		rows = append(rows, serverRow{Name: s.Name, Address: s.Address, HTTP: s.HTTP, Role: s.Role, Term: s.Term, LastIndex: s.LastIndex, Leader: s.Leader, Error: s.Error,
			LastContact: s.LastContact, Healthy: s.Healthy && s.Error == "", Problem: s.Problem,
			Version: s.Version, CommandLevel: s.CommandLevel, FilesBytes: s.FilesBytes, Files: s.Files})
	}
	return writeJSON(w, rows)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "mem<=10" reads better than "mem\u003c=10"
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
