package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/netmgr/netmgr/client"
)

// renderResources writes, below netstatus -m's table, the RESOURCES table
// of the machines that have GPUs, generic resources or disk to count, or
// that cannot enforce something: FREE/TOTAL of CPUS, GPUS (with their
// types), each GRES and DISK, and what is NOT ENFORCED. Nothing when no
// machine has any.
func renderResources(w io.Writer, ms []client.Machine) error {
	var rows []client.Machine
	for _, m := range sortedMachines(ms) {
		if m.Resources != nil {
			rows = append(rows, m)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "RESOURCES\tCPUS\tGPUS\tGRES\tDISK\tNOT ENFORCED")
	for _, m := range rows {
		r := m.Resources
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\t%s\n", printable(m.Name), max(m.Slots-max(r.CPUsUsed, m.Running), 0), m.Slots,
			printable(gpuColumn(r.GPUs)), printable(gresColumn(r)), diskColumn(r), printable(orDash(strings.Join(r.Unenforced, "; "))))
	}
	return tw.Flush()
}

// gpuColumn is FREE/TOTAL of a machine's GPUs and their types: "1/2
// a100", "3/4 a100,t4"; "-" for none.
func gpuColumn(gs []client.GPU) string {
	if len(gs) == 0 {
		return "-"
	}
	free := 0
	var types []string
	for _, g := range gs {
		if !g.Used {
			free++
		}
		if g.Type != "" && !slices.Contains(types, g.Type) {
			types = append(types, g.Type)
		}
	}
	s := strconv.Itoa(free) + "/" + strconv.Itoa(len(gs))
	if len(types) > 0 {
		s += " " + strings.Join(types, ",")
	}
	return s
}

// gresColumn is FREE/TOTAL of each generic resource: "fpga 1/2, ssd 1/1".
func gresColumn(r *client.MachineResources) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.Gres)) {
		out = append(out, fmt.Sprintf("%s %d/%d", name, r.Gres[name]-r.GresUsed[name], r.Gres[name]))
	}
	return orDash(strings.Join(out, ", "))
}

// diskColumn is FREE/TOTAL of the disk instances may claim: "48.8G/50.0G".
func diskColumn(r *client.MachineResources) string {
	if r.DiskMB <= 0 {
		return "-"
	}
	return formatMemory(r.DiskMB-r.DiskUsedMB) + "/" + formatMemory(r.DiskMB)
}

// gpuRequest is a job's GPU request as netexec --gpus takes it: "2",
// "a100:2"; "" for none.
func gpuRequest(s client.JobSpec) string {
	switch {
	case s.GPUs == 0:
		return ""
	case s.GPUType != "":
		return s.GPUType + ":" + strconv.Itoa(s.GPUs)
	}
	return strconv.Itoa(s.GPUs)
}

// formatCounts writes NAME:N,NAME:N in name order; "" for none.
func formatCounts(m map[string]int) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, name+":"+strconv.Itoa(m[name]))
	}
	return strings.Join(out, ",")
}

// intList writes 0,2,3; "" for none.
func intList(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ",")
}

// renderLicenses writes netstatus --licenses: LICENSE, COUNT, USED, FREE.
func renderLicenses(w io.Writer, ls []client.License) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "LICENSE\tCOUNT\tUSED\tFREE")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", printable(l.Name), l.Count, l.Used, max(l.Count-l.Used, 0))
	}
	return tw.Flush()
}
