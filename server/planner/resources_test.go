package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/netmgr/netmgr/fsm"
	"github.com/netmgr/netmgr/matcher"
	"github.com/netmgr/netmgr/queue"
	"github.com/netmgr/netmgr/server/planner"
)

// gpuState returns an FSM with machines g1 and g2 (4 CPUs, two a100 GPUs
// each) and c (4 CPUs, no GPU), the licence matlab of count 1, and an
// applier.
func gpuState(t *testing.T) (*fsm.FSM, func(fsm.MessageType, any) *fsm.Result) {
	t.Helper()
	f := fsm.New()
	apply := applier(t, f)
	gpus := []fsm.GPU{{Index: 0, Type: "a100"}, {Index: 1, Type: "a100"}}
	for _, name := range []string{"g1", "g2"} {
		apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: name, Arch: "x86_64", CPUs: 4, MemoryMB: 4096, GPUs: gpus}})
	}
	apply(fsm.StubJoinType, fsm.StubJoin{At: at, Machine: fsm.MachineFacts{Name: "c", Arch: "x86_64", CPUs: 4, MemoryMB: 4096}})
	apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: at, Database: fsm.Database{Licenses: []fsm.DeclaredLicense{{Name: "matlab", Count: 1}}}})
	return f, apply
}

func resourceJob(min int, set func(*fsm.JobSpec)) fsm.Submit {
	s := fsm.JobSpec{Binaries: map[string]string{"*": "/bin/x"}, Min: min}
	set(&s)
	return fsm.Submit{At: at, Owner: "fred", Spec: s}
}

// pass runs one pass and returns its Place and, per job, the reason the
// last of its instances was not placed.
func pass(f *fsm.FSM, now time.Time) (fsm.Place, map[uint64]string) {
	var plan fsm.Place
	why := map[uint64]string{}
	f.Read(func(v fsm.View) {
		plan = planner.New(v, allUp(v), now).Place()
		planner.New(v, allUp(v), now).Run(func(it queue.Item, _ *fsm.Instance, res matcher.Result, held *planner.Held) {
			switch {
			case held != nil:
				why[it.JobID] = held.Reason
			case res.Machine < 0:
				why[it.JobID] = res.Why()
			}
		})
	})
	return plan, why
}

func TestPassPlacesGPUsAndSaysWhenShort(t *testing.T) {
	f, apply := gpuState(t)
	job := resourceJob(5, func(s *fsm.JobSpec) { s.GPUs = 1 })
	apply(fsm.SubmitResourcesType, job)
	plan, why := pass(f, at.Add(time.Minute))
	per := map[string]int{}
	for _, a := range plan.Assignments {
		per[a.Machine]++
	}
	if len(plan.Assignments) != 4 || per["g1"] != 2 || per["g2"] != 2 {
		t.Fatalf("placed %v, want two on each GPU machine", per)
	}
	if got, want := why[1], "3 machines have fewer than 1 free GPU"; got != want {
		t.Errorf("the fifth instance: %q, want %q", got, want)
	}
	apply(fsm.PlaceType, plan)
	var gpus [][]int
	f.Read(func(v fsm.View) {
		j, _ := v.Job(1)
		for _, in := range j.Instances {
			gpus = append(gpus, in.GPUs)
		}
	})
	if len(gpus[0])+len(gpus[1])+len(gpus[2])+len(gpus[3]) != 4 || gpus[4] != nil {
		t.Errorf("GPUs after the Place: %v", gpus)
	}
}

func TestPassCountsCPUs(t *testing.T) {
	f, apply := gpuState(t)
	apply(fsm.SubmitResourcesType, resourceJob(7, func(s *fsm.JobSpec) { s.CPUs = 2 }))
	plan, why := pass(f, at.Add(time.Minute))
	if len(plan.Assignments) != 6 {
		t.Fatalf("placed %d instances of 2 CPUs on three 4-CPU machines, want 6", len(plan.Assignments))
	}
	if got := why[1]; got != "3 machines have no free slot" {
		t.Errorf("the seventh: %q", got)
	}
}

func TestPassHoldsForLicences(t *testing.T) {
	f, apply := gpuState(t)
	lic := func(s *fsm.JobSpec) { s.Licenses = map[string]int{"matlab": 1} }
	apply(fsm.SubmitResourcesType, resourceJob(1, lic))
	apply(fsm.SubmitResourcesType, resourceJob(1, lic))
	plan, why := pass(f, at.Add(time.Minute))
	if len(plan.Assignments) != 1 || plan.Assignments[0].JobID != 1 {
		t.Fatalf("placed %+v, want job 1 only (one licence)", plan.Assignments)
	}
	if got, want := why[2], "waiting for licence matlab: 1 of 1 in use, needs 1"; got != want {
		t.Errorf("job 2: %q, want %q", got, want)
	}
	apply(fsm.PlaceType, plan)
	if _, why := pass(f, at.Add(time.Minute)); why[2] != "waiting for licence matlab: 1 of 1 in use, needs 1" {
		t.Errorf("job 2 after job 1 holds it: %q", why[2])
	}
}

func TestPassGangWithGPUs(t *testing.T) {
	f, apply := gpuState(t)
	apply(fsm.SubmitResourcesType, resourceJob(5, func(s *fsm.JobSpec) { s.GPUs, s.Gang = 1, true }))
	apply(fsm.SubmitResourcesType, resourceJob(4, func(s *fsm.JobSpec) { s.GPUs, s.Gang = 1, true }))
	plan, why := pass(f, at.Add(time.Minute))
	for _, a := range plan.Assignments {
		if a.JobID != 2 {
			t.Fatalf("placed %+v: the gang of 5 cannot fit four GPUs", a)
		}
	}
	if len(plan.Assignments) != 4 {
		t.Fatalf("placed %d of the gang of 4, want 4", len(plan.Assignments))
	}
	if got := why[1]; !strings.Contains(got, "the machines that can run it have 4 slots in all") {
		t.Errorf("gang of 5: %q", got)
	}
	if res := apply(fsm.PlaceType, plan); len(res.Accepted) != 4 {
		t.Fatalf("the FSM accepted %d of the gang, want 4", len(res.Accepted))
	}
}

func TestSubmitUnrunnableResources(t *testing.T) {
	f, _ := gpuState(t)
	for _, c := range []struct {
		set  func(*fsm.JobSpec)
		want string
	}{
		{func(s *fsm.JobSpec) { s.GPUs = 3 }, "3 machines have fewer than 3 free GPUs"},
		{func(s *fsm.JobSpec) { s.GPUs, s.GPUType = 1, "h100" }, "3 machines have fewer than 1 free h100 GPU"},
		{func(s *fsm.JobSpec) { s.CPUs = 8 }, "3 machines have fewer than 8 free CPUs"},
		{func(s *fsm.JobSpec) { s.Gres = map[string]int{"fpga": 1} }, "3 machines have fewer than 1 free fpga"},
		{func(s *fsm.JobSpec) { s.Licenses = map[string]int{"sas": 1} }, "no licence sas is declared"},
		{func(s *fsm.JobSpec) { s.Licenses = map[string]int{"matlab": 2} }, "licence matlab: the database declares 1, the job holds 2 at once"},
		{func(s *fsm.JobSpec) { s.GPUs = 2 }, ""},
	} {
		sub := resourceJob(1, c.set)
		var got string
		f.Read(func(v fsm.View) { got = planner.PlanSubmit(v, allUp(v), sub, false).Unrunnable })
		if !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%+v: unrunnable %q, want %q", sub.Spec, got, c.want)
		}
	}
}
