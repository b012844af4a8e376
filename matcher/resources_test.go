package matcher

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func gpus(types ...string) func(*MachineView) {
	return func(m *MachineView) {
		for _, t := range types {
			m.GPUs = append(m.GPUs, GPU{Type: t})
		}
	}
}

func gres(kv map[string]int) func(*MachineView) { return func(m *MachineView) { m.Gres = kv } }

func disk(total, used int64) func(*MachineView) {
	return func(m *MachineView) { m.DiskMB, m.UsedDiskMB = total, used }
}

func TestMatchGPUsSaysWhichWasShort(t *testing.T) {
	ms := []MachineView{
		mv("a", "x86_64"),
		with(mv("b", "x86_64"), gpus("t4")),
		with(mv("c", "x86_64"), gpus("a100")),
		with(mv("d", "x86_64"), gpus("a100", "a100")),
	}
	req := Request{JobID: 1, BinaryKeys: []string{"x86_64"}, GPUs: 2}
	r := match(t, req, ms)
	if name(r, ms) != "d" {
		t.Fatalf("chose %q, want d", name(r, ms))
	}
	if got, want := r.Why(), "3 machines have fewer than 2 free GPUs"; got != want {
		t.Fatalf("Why = %q, want %q", got, want)
	}
	req = Request{JobID: 1, BinaryKeys: []string{"x86_64"}, GPUs: 1, GPUType: "t4"}
	r = match(t, req, ms)
	if name(r, ms) != "b" {
		t.Fatalf("t4: chose %q, want b", name(r, ms))
	}
	if got, want := r.Why(), "3 machines have fewer than 1 free t4 GPU"; got != want {
		t.Fatalf("Why = %q, want %q", got, want)
	}
}

func TestMatchCPUsGresDisk(t *testing.T) {
	ms := []MachineView{
		with(mv("a", "x86_64"), slots(2)),
		with(mv("b", "x86_64"), slots(8), gres(map[string]int{"fpga": 1})),
		with(mv("c", "x86_64"), slots(8), gres(map[string]int{"fpga": 2}), disk(100, 0)),
		with(mv("d", "x86_64"), slots(8), gres(map[string]int{"fpga": 2}), disk(2000, 0)),
	}
	req := Request{JobID: 1, BinaryKeys: []string{"x86_64"}, CPUs: 4, Gres: []GresRequest{{"fpga", 2}}, DiskMB: 1000}
	r := match(t, req, ms)
	if name(r, ms) != "d" {
		t.Fatalf("chose %q, want d", name(r, ms))
	}
	want := "1 machine has fewer than 4 free CPUs; 1 has fewer than 2 free fpga; 1 lacks 1000 MB free disk"
	if got := r.Why(); got != want {
		t.Fatalf("Why = %q, want %q", got, want)
	}
}

// TestTakeCountsResources: a Pool's Take and Release count CPUs, GPUs,
// gres and disk, so a round never hands out more than a machine has.
func TestTakeCountsResources(t *testing.T) {
	ms := []MachineView{with(mv("a", "x86_64"), slots(4), gpus("a100", "t4", "a100"),
		gres(map[string]int{"ssd": 1}), disk(1000, 0))}
	p := NewPool(ms)
	m := New()
	req := Request{JobID: 1, BinaryKeys: []string{"x86_64"}, CPUs: 2, GPUs: 1, GPUType: "a100",
		Gres: []GresRequest{{"ssd", 1}}, DiskMB: 400}
	r := m.MatchPool(req, p)
	if r.Machine != 0 {
		t.Fatalf("first: %v", r.Why())
	}
	p.Take(0, req)
	if got := p.Machine(0); got.UsedCPUs != 2 || !got.GPUs[0].Used || got.GPUs[1].Used || got.GPUs[2].Used ||
		got.UsedGres["ssd"] != 1 || got.UsedDiskMB != 400 {
		t.Fatalf("after Take: %+v", got)
	}
	if ms[0].GPUs[0].Used || ms[0].UsedGres != nil {
		t.Fatal("Take changed the caller's view")
	}
	if r := m.MatchPool(req, p); r.Machine >= 0 || r.Why() != "1 machine has fewer than 1 free ssd" {
		t.Fatalf("second: machine %d, %q", r.Machine, r.Why())
	}
	req2 := req
	req2.Gres = nil
	p.Take(0, req2)
	if r := m.MatchPool(Request{JobID: 2, BinaryKeys: []string{"*"}}, p); r.Machine >= 0 || r.Why() != "1 machine has no free slot" {
		t.Fatalf("third: machine %d, %q", r.Machine, r.Why())
	}
	p.Release(0, req2)
	p.Release(0, req)
	if got := p.Machine(0); got.UsedCPUs != 0 || got.GPUs[0].Used || got.GPUs[2].Used || got.UsedGres["ssd"] != 0 || got.UsedDiskMB != 0 {
		t.Fatalf("after Release: %+v", got)
	}
}

// TestRandomResourcePlacementNeverOvercommits places random requests
// through one Pool and checks, against the views as given, that no
// machine ends with more CPUs, GPUs, gres, memory or disk taken than it
// has, and that every answer agrees with the reference matcher.
func TestRandomResourcePlacementNeverOvercommits(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 1))
	types := []string{"a100", "t4"}
	var ms []MachineView
	for i := range 40 {
		m := mv(fmt.Sprintf("m%02d", i), "x86_64")
		m.Slots = 1 + rng.IntN(8)
		m.MemoryMB = int64(rng.IntN(4)) * 1024
		m.DiskMB = int64(rng.IntN(3)) * 500
		for range rng.IntN(4) {
			m.GPUs = append(m.GPUs, GPU{Type: types[rng.IntN(2)]})
		}
		if rng.IntN(2) == 0 {
			m.Gres = map[string]int{"fpga": rng.IntN(3)}
		}
		ms = append(ms, m)
	}
	p := NewPool(ms)
	m := New()
	placed := 0
	for j := range 400 {
		req := Request{JobID: uint64(j), BinaryKeys: []string{"x86_64"}, CPUs: rng.IntN(4), GPUs: rng.IntN(3),
			MemoryMB: int64(rng.IntN(3)) * 256, DiskMB: int64(rng.IntN(3)) * 100}
		if rng.IntN(2) == 0 {
			req.GPUType = types[rng.IntN(2)]
		}
		if rng.IntN(3) == 0 {
			req.Gres = []GresRequest{{"fpga", 1}}
		}
		views := make([]MachineView, p.Len())
		for i := range views {
			views[i] = p.Machine(i)
		}
		r := m.MatchPool(req, p)
		checkReference(t, req, views, r)
		if r.Machine >= 0 {
			p.Take(r.Machine, req)
			placed++
		}
	}
	if placed == 0 {
		t.Fatal("nothing placed")
	}
	for i := range ms {
		got := p.Machine(i)
		used := 0
		for _, g := range got.GPUs {
			if g.Used {
				used++
			}
		}
		if got.UsedCPUs > got.Slots || got.UsedMemoryMB > max(got.MemoryMB, 0) || got.UsedDiskMB > got.DiskMB ||
			got.UsedGres["fpga"] > got.Gres["fpga"] || used > len(got.GPUs) {
			t.Fatalf("machine %s overcommitted: %+v", got.Name, got)
		}
	}
	t.Logf("placed %d of 400", placed)
}

// TestMatchResourcesOnReservedMachines: a reserved GPU machine is its
// holder's; another user's GPU request is turned down for the
// reservation, not for the GPUs, and the holder's takes it.
func TestMatchResourcesOnReservedMachines(t *testing.T) {
	ms := []MachineView{
		with(mv("r", "x86_64"), gpus("a100"), reservedBy("alice")),
		with(mv("s", "x86_64"), gpus("a100"), full),
	}
	req := Request{JobID: 1, Owner: "bob", BinaryKeys: []string{"x86_64"}, GPUs: 1}
	r := match(t, req, ms)
	if r.Machine >= 0 || r.Why() != "1 machine is reserved by another user; 1 has no free slot" {
		t.Fatalf("bob: machine %d, %q", r.Machine, r.Why())
	}
	req.Owner = "alice"
	if r := match(t, req, ms); name(r, ms) != "r" {
		t.Fatalf("alice: chose %q (%s), want r", name(r, ms), r.Why())
	}
}
