package matcher

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestPoolReplaceAgainstNewPool keeps one Pool through rounds of random
// changes, as the leader keeps one between passes: each round matches and
// takes random requests (which fills the Pool's lazy columns: attributes,
// GPU types, generic resources, thresholds), then replaces the machines
// the round took from with their views and some others with new random
// views, and checks that the Pool then answers every request of the next
// round exactly as a Pool built afresh from the same views does.
func TestPoolReplaceAgainstNewPool(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 36))
		n := 1 + rng.IntN(150)
		views := make([]MachineView, n)
		for i := range views {
			views[i] = randomView(rng, fmt.Sprintf("m%03d", i))
		}
		kept := NewPool(slices.Clone(views))
		for round := range 30 {
			reqs := make([]Request, 1+rng.IntN(6))
			for k := range reqs {
				reqs[k] = randomRequest(rng, uint64(k))
			}
			fresh := NewPool(slices.Clone(views))
			got, want := placeEach(kept, reqs), placeEach(fresh, reqs)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d round %d: the kept Pool placed\n%v\na new Pool\n%v", seed, round, got, want)
			}
			for _, i := range kept.Changed() {
				kept.Replace(i, views[i])
			}
			for range rng.IntN(n/4 + 2) {
				i := rng.IntN(n)
				views[i] = randomView(rng, views[i].Name)
				kept.Replace(i, views[i])
			}
			if c := kept.Changed(); len(c) != 0 {
				t.Fatalf("seed %d round %d: Changed after replacing = %v, want none", seed, round, c)
			}
		}
	}
}

// placeEach matches up to 8 instances of each request on p, taking what
// each is given, and returns every Result.
func placeEach(p *Pool, reqs []Request) []Result {
	m := New()
	var out []Result
	for _, req := range reqs {
		for inst := range 8 {
			req.Instance = inst
			r := m.MatchPool(req, p)
			out = append(out, r)
			if r.Machine < 0 {
				break
			}
			p.Take(r.Machine, req)
		}
	}
	return out
}

var (
	replaceKeys   = []string{"x86_64", "sparc", "fpu", "gpu"}
	replaceMounts = []string{"/a", "/b"}
	replaceUsers  = []string{"", "", "fred"}
)

// pickSome is up to max distinct strings of from.
func pickSome(rng *rand.Rand, from []string, max int) []string {
	var out []string
	for range rng.IntN(max + 1) {
		if k := from[rng.IntN(len(from))]; !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// randomView is a machine called name in a random state, with some of
// everything a view can hold: keys, mounts, attributes, memory, jobs,
// GPUs, generic resources, disk, a reservation, sleep.
func randomView(rng *rand.Rand, name string) MachineView {
	m := MachineView{
		Name:       name,
		Keys:       pickSome(rng, replaceKeys, 3),
		Mounts:     pickSome(rng, replaceMounts, 2),
		Up:         rng.IntN(8) > 0,
		Awake:      rng.IntN(8) > 0,
		ReservedBy: replaceUsers[rng.IntN(len(replaceUsers))],
		Slots:      1 + rng.IntN(4),
		Running:    rng.IntN(3),
		Load:       float64(rng.IntN(6)) / 2,
		Rating:     float64(rng.IntN(3)),
		MemoryMB:   int64(rng.IntN(3)) * 512,
		DiskMB:     int64(rng.IntN(3)) * 1000,
	}
	if !m.Awake {
		m.AsleepReason = []string{"console login", "load 3 > 2"}[rng.IntN(2)]
	}
	if rng.IntN(2) == 0 {
		m.Attrs = map[string]float64{"mem": float64(rng.IntN(64))}
	}
	if rng.IntN(3) == 0 {
		m.JobCounts = map[uint64]int{uint64(rng.IntN(4)): 1 + rng.IntN(2)}
	}
	for range rng.IntN(3) {
		m.GPUs = append(m.GPUs, GPU{Type: []string{"a100", "t4"}[rng.IntN(2)], Used: rng.IntN(3) == 0})
	}
	if rng.IntN(3) == 0 {
		m.Gres = map[string]int{"fpga": 1 + rng.IntN(2)}
		m.UsedGres = map[string]int{"fpga": rng.IntN(2)}
	}
	return m
}

// randomRequest is a random request of job.
func randomRequest(rng *rand.Rand, job uint64) Request {
	req := Request{
		JobID:         job,
		Owner:         replaceUsers[rng.IntN(len(replaceUsers))],
		BinaryKeys:    pickSome(rng, append(slices.Clone(replaceKeys), "*"), 2),
		Keys:          pickSome(rng, replaceKeys, 1),
		Mounts:        pickSome(rng, replaceMounts, 1),
		MaxPerMachine: rng.IntN(3),
		MemoryMB:      int64(rng.IntN(3)) * 128,
		Load:          float64(rng.IntN(3)) / 2,
		CPUs:          rng.IntN(3),
		DiskMB:        int64(rng.IntN(2)) * 500,
	}
	if len(req.BinaryKeys) == 0 {
		req.BinaryKeys = []string{"*"}
	}
	if rng.IntN(3) == 0 {
		req.Requirements = []Requirement{{"mem", []string{">", "<=", "=="}[rng.IntN(3)], 32}}
	}
	if rng.IntN(4) == 0 {
		req.GPUs, req.GPUType = 1, []string{"", "a100"}[rng.IntN(2)]
	}
	if rng.IntN(4) == 0 {
		req.Gres = []GresRequest{{Name: "fpga", Count: 1}}
	}
	return req
}

// TestFailuresAgainstMatchPool matches random requests of a few shapes,
// with random jobs and instances, through one Failures, taking what each
// is given and now and then replacing a machine, and checks every answer
// against MatchPool's on the same Pool.
func TestFailuresAgainstMatchPool(t *testing.T) {
	remembered := 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 37))
		views := make([]MachineView, 1+rng.IntN(60))
		for i := range views {
			views[i] = randomView(rng, fmt.Sprintf("m%03d", i))
		}
		p, m := NewPool(views), New()
		// A base request and variants that differ from it in one field
		// each: a key that left a field out would answer one from another.
		base := randomRequest(rng, 0)
		base.MaxPerMachine = 0
		shapes := []Request{base}
		for _, vary := range []func(*Request){
			func(r *Request) { r.Owner = "joe" },
			func(r *Request) { r.BinaryKeys = []string{"sparc"} },
			func(r *Request) { r.Keys = []string{"gpu"} },
			func(r *Request) { r.Mounts = []string{"/b"} },
			func(r *Request) { r.Machines = []string{views[0].Name} },
			func(r *Request) { r.Requirements = []Requirement{{"mem", ">", 40}} },
			func(r *Request) { r.MemoryMB = 1024 },
			func(r *Request) { r.CPUs = 3 },
			func(r *Request) { r.GPUs, r.GPUType = 1, "t4" },
			func(r *Request) { r.Gres = []GresRequest{{Name: "fpga", Count: 2}} },
			func(r *Request) { r.DiskMB = 1500 },
		} {
			r := base
			vary(&r)
			shapes = append(shapes, r)
		}
		var f Failures
		for step := range 300 {
			req := shapes[rng.IntN(len(shapes))]
			req.JobID, req.Instance = uint64(rng.IntN(5)), rng.IntN(10)
			want := m.MatchPool(req, p)
			before := len(f.failed)
			got := m.MatchPoolRemembering(req, p, &f)
			if len(f.failed) == before && got.Machine < 0 && req.MaxPerMachine == 0 {
				remembered++
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: remembered %+v, MatchPool %+v", seed, step, got, want)
			}
			switch {
			case got.Machine >= 0 && rng.IntN(2) == 0:
				p.Take(got.Machine, req)
			case rng.IntN(10) == 0:
				i := rng.IntN(len(views))
				views[i] = randomView(rng, views[i].Name)
				p.Replace(i, views[i])
			}
		}
	}
	if remembered < 100 {
		t.Errorf("%d answers came from Failures: the test exercised too little", remembered)
	}
}
