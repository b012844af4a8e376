package planner

import (
	"maps"
	"slices"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
)

// matchRequest is what the matcher needs to know of one instance.
func matchRequest(j *fsm.Job, in *fsm.Instance) matcher.Request {
	req := matcher.Request{
		JobID:         j.ID,
		Instance:      in.Index,
		Owner:         j.Owner,
		BinaryKeys:    j.BinaryKeys(),
		Keys:          j.Spec.Keys,
		Mounts:        j.Spec.Mounts,
		Machines:      j.Spec.Machines,
		MaxPerMachine: j.Spec.PerMachineLimit(),
		MemoryMB:      j.Spec.MemoryMB,
		Load:          j.Spec.Load,
		CPUs:          j.Spec.CPUs,
		GPUs:          j.Spec.GPUs,
		GPUType:       j.Spec.GPUType,
		DiskMB:        j.Spec.DiskMB,
		Prefer:        checkpointMachine(j, in),
	}
	for _, name := range slices.Sorted(maps.Keys(j.Spec.Gres)) {
		req.Gres = append(req.Gres, matcher.GresRequest{Name: name, Count: j.Spec.Gres[name]})
	}
	for _, r := range j.Spec.Requirements {
		req.Requirements = append(req.Requirements, matcher.Requirement{Attr: r.Attr, Op: r.Op, Value: r.Value})
	}
	return req
}

// checkpointMachine is the machine an instance whose last attempt ended
// in a checkpoint exit ran on, where its next attempt should start (its
// files may still be in the page cache there); "" for any other.
func checkpointMachine(j *fsm.Job, in *fsm.Instance) string {
	if !j.Spec.HasCheckpoint() || len(in.History) == 0 {
		return ""
	}
	last := in.History[len(in.History)-1]
	if last.State != fsm.InstanceExited || last.ExitCode != j.Spec.CheckpointExit || last.Signal != "" {
		return ""
	}
	return last.Machine
}

// machineView is what the matcher sees of a machine: the database's
// effective attributes and counts, the reservation in force now, the
// owner policy's verdict, with the stub's liveness and load.
func machineView(v fsm.View, m *fsm.Machine, l Liveness, now time.Time) matcher.MachineView {
	e := m.Effective()
	counts := v.JobCounts(m.Name)
	imposed := 0.0
	for _, id := range slices.Sorted(maps.Keys(counts)) { // float sums depend on order
		if j, ok := v.Job(id); ok {
			imposed += float64(counts[id]) * loadOf(&j.Spec)
		}
	}
	reservedBy, _ := v.ReservedBy(m.Name, now)
	cpus, gpus, disk, gres := v.MachineUsage(m.Name)
	attrs := e.Attrs
	if l.HasIdle {
		attrs = maps.Clone(attrs)
		if attrs == nil {
			attrs = map[string]float64{}
		}
		attrs[IdleAttr] = l.IdleMinutes
	}
	return matcher.MachineView{
		Name:         m.Name,
		ReservedBy:   reservedBy,
		Keys:         e.Keys,
		Attrs:        attrs,
		Mounts:       e.Mounts,
		Up:           m.Usable() && l.Up,
		Awake:        m.Asleep == "",
		AsleepReason: m.Asleep,
		Slots:        m.Slots(),
		Running:      v.Running(m.Name),
		Load:         l.Load,
		Rating:       e.Rating,
		MemoryMB:     e.MemoryMB,
		UsedMemoryMB: v.UsedMemoryMB(m.Name),
		ImposedLoad:  imposed,
		JobCounts:    counts,
		UsedCPUs:     cpus,
		GPUs:         gpuViews(e.GPUs, gpus),
		Gres:         e.Gres,
		UsedGres:     gres,
		DiskMB:       e.DiskMB,
		UsedDiskMB:   disk,
	}
}

// gpuViews is what the matcher sees of a machine's GPUs: each one's type
// and whether an active instance holds it (bit Index of used); nil for a
// machine without GPUs.
func gpuViews(gpus []fsm.GPU, used uint64) []matcher.GPU {
	if len(gpus) == 0 {
		return nil
	}
	out := make([]matcher.GPU, len(gpus))
	for i, g := range gpus {
		out[i] = matcher.GPU{Type: g.Type, Used: used&(1<<uint(g.Index)) != 0}
	}
	return out
}

// loadOf is the load one instance of the job imposes: its load= factor,
// one busy CPU by default.
func loadOf(s *fsm.JobSpec) float64 {
	if s.Load > 0 {
		return s.Load
	}
	return 1
}
