package fsmscale

import (
	"fmt"
	"slices"
	"time"

	"github.com/netmgr/netmgr/fsm"
)

// profile is a kind of job the site runs: the binaries, keys, mounts and
// requirements its specs share, how often it is submitted, and the
// machines that match it.
type profile struct {
	weight       int
	binaries     []string // keys; "*" runs anywhere
	program      string
	keys         []string
	mounts       []string
	requirements []fsm.Requirement
	memMB        int64
	candidates   []int // machine indexes that match, in name order
	cursor       int   // where the next placement starts looking
}

// profiles returns the site's job kinds, their candidates filled in from
// ms.
func profiles(ms []machine) []*profile {
	ps := []*profile{
		{weight: 40, binaries: []string{"x86_64"}, program: "sim"},
		{weight: 15, binaries: []string{"aarch64", "x86_64"}, program: "solve"},
		{weight: 18, binaries: []string{fsm.AnyKey}, program: "run.sh"},
		{weight: 8, binaries: []string{"x86_64"}, program: "fem", keys: []string{"fpu"}, memMB: 2048},
		{weight: 4, binaries: []string{"x86_64"}, program: "train", keys: []string{"gpu"}, memMB: 16384,
			requirements: []fsm.Requirement{{Attr: "gpus", Op: ">=", Value: 1}}},
		{weight: 4, binaries: []string{fsm.AnyKey}, program: "analyse.m", keys: []string{"matlab"}},
		{weight: 3, binaries: []string{"mips", "sparc"}, program: "legacy"},
		{weight: 4, binaries: []string{"aarch64", "x86_64"}, program: "assemble", memMB: 16384,
			requirements: []fsm.Requirement{{Attr: "mem", Op: ">=", Value: 131072}}},
		{weight: 4, binaries: []string{"x86_64"}, program: "stage", mounts: []string{"/scratch"}},
	}
	for _, p := range ps {
		for i := range ms {
			if p.matches(&ms[i]) {
				p.candidates = append(p.candidates, i)
			}
		}
	}
	return ps
}

// matches reports whether a machine can run the profile's jobs: one of
// its binaries' keys, its keys and mounts, and its requirements (only the
// mem and gpus attributes are used, and only with >=).
func (p *profile) matches(m *machine) bool {
	binary := slices.ContainsFunc(p.binaries, func(k string) bool {
		_, ok := slices.BinarySearch(m.keys, k)
		return k == fsm.AnyKey || ok
	})
	if !binary || !hasAll(m.keys, p.keys) || !hasAll(m.mounts, p.mounts) {
		return false
	}
	for _, r := range p.requirements {
		have := float64(m.memMB)
		if r.Attr == "gpus" {
			have = 0
			if _, ok := slices.BinarySearch(m.keys, "gpu"); ok {
				have = 4
			}
		}
		if have < r.Value {
			return false
		}
	}
	return true
}

// fate is how a job's story ends in the built state.
type fate int

const (
	exited        fate = iota // every instance exited 0
	failed                    // exit 1; restarted once and exited 0 when restartable
	signaled                  // killed by SIGSEGV
	killedRunning             // netkill while running
	killedQueued              // netkill before it was placed
	running                   // placed and running (a few only placed)
	queued                    // waiting
)

// job is one job the generator submits.
type job struct {
	id    uint64
	p     *profile
	spec  fsm.JobSpec
	fate  fate
	owner string
	// where holds each instance's machine index once placed.
	where []int
}

// newJob draws job id's spec and fate; unfinished says whether it is
// among the most recent jobs, which are left running or queued.
func (g *generator) newJob(id uint64, unfinished bool) *job {
	p := g.pick()
	user := fmt.Sprintf("u%03d", g.rng.IntN(g.rng.IntN(200)+1))
	j := &job{id: id, p: p, owner: user}
	s := fsm.JobSpec{
		Binaries:     make(map[string]string, len(p.binaries)),
		Args:         []string{"-i", fmt.Sprintf("/home/%s/data/run%05d.in", user, id%100_000), "-o", fmt.Sprintf("/home/%s/out/run%05d", user, id%100_000)},
		Min:          1,
		Keys:         p.keys,
		Mounts:       p.mounts,
		Requirements: p.requirements,
		MemoryMB:     p.memMB,
	}
	for _, k := range p.binaries {
		s.Binaries[k] = fmt.Sprintf("/home/%s/bin/%s/%s", user, k, p.program)
		if k == fsm.AnyKey {
			s.Binaries[k] = "/home/" + user + "/bin/" + p.program
		}
	}
	if g.rng.IntN(10) < 4 {
		s.Name = fmt.Sprintf("%s-%s-%d", p.program, user, g.rng.IntN(50))
	}
	if g.rng.IntN(10) < 3 {
		s.Env = []string{"OMP_NUM_THREADS=4", fmt.Sprintf("RUN=%d", id)}
	}
	switch r := g.rng.IntN(100); {
	case r < 8:
		s.Min = 2 + g.rng.IntN(3)
	case r < 9:
		s.Min = 8 + g.rng.IntN(25)
	case r < 10:
		s.Min, s.Unique = 2+g.rng.IntN(7), true
	}
	switch r := g.rng.IntN(20); {
	case r < 6:
		s.Queue = "batch"
	case r < 9:
		s.Queue = "short"
	case r < 10:
		s.Queue = "long"
	}
	if g.rng.IntN(12) == 0 {
		s.Restart, s.MaxRestarts = fsm.RestartOnFailure, 3
	}
	if s.MemoryMB == 0 && g.rng.IntN(4) == 0 {
		s.MemoryMB = 512 << g.rng.IntN(4)
	}
	j.spec = s
	j.fate = g.drawFate(unfinished)
	if j.fate == queued && g.p.Steady > 0 {
		j.fate = running // in flight, not waiting: it ends later
	}
	return j
}

// pick draws a profile by weight.
func (g *generator) pick() *profile {
	r := g.rng.IntN(g.totalWeight)
	for _, p := range g.profiles {
		if r < p.weight {
			return p
		}
		r -= p.weight
	}
	return g.profiles[len(g.profiles)-1]
}

// drawFate: finished jobs mostly exited, some failed, signalled or
// killed; unfinished ones two thirds running, one third queued.
func (g *generator) drawFate(unfinished bool) fate {
	if unfinished {
		if g.rng.IntN(3) == 0 {
			return queued
		}
		return running
	}
	switch r := g.rng.IntN(1000); {
	case r < 40:
		return failed
	case r < 50:
		return signaled
	case r < 65:
		return killedRunning
	case r < 80:
		return killedQueued
	}
	return exited
}

// placed reports whether the job's instances get a machine.
func (j *job) placed() bool { return j.fate != queued && j.fate != killedQueued }

// idempotencyKey is a key like the client's random one, drawn from the
// generator's seeded source.
func (g *generator) idempotencyKey() string {
	return fmt.Sprintf("%016x%016x", g.rng.Uint64(), g.rng.Uint64())
}

// runtime draws how long a finished attempt ran.
func (g *generator) runtime() time.Duration {
	return time.Duration(30+g.rng.IntN(7200)) * time.Second
}
